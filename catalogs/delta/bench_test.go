package delta_test

import (
	"context"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// BenchmarkAppend: one stream of 100 batches of 10 000 rows (id, name)
// and its commit, on local files. SetBytes counts 16 bytes a row.
func BenchmarkAppend(b *testing.B) {
	p := openLocal(b, "")
	ctx := context.Background()
	id := ident("default", "bench")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		b.Fatal(err)
	}
	batch := catalogtest.Batch(0, 10000)
	defer batch.Release()
	b.SetBytes(int64(100 * 10000 * 16))
	for b.Loop() {
		s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			b.Fatal(err)
		}
		for range 100 {
			if err := s.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		rs, err := s.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Commit(ctx, id, rs); err != nil {
			b.Fatal(err)
		}
	}
}
