package paimon_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// BenchmarkCheckUnreferenced is the replay check of CommitMessages on a
// table with N prior commits (one data file each): each op checks a
// staged file, then (untimed) one more commit lands, so every check has
// a snapshot it has not seen (go test -bench CheckUnreferenced
// -benchtime 50x).
func BenchmarkCheckUnreferenced(b *testing.B) {
	for _, n := range []int{100, 500, 1000} {
		b.Run(fmt.Sprint("commits=", n), func(b *testing.B) {
			p, _ := openLocal(b, nil)
			ctx := context.Background()
			id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
			if _, err := p.CreateTable(ctx, id, sampleSchema, nil); err != nil {
				b.Fatal(err)
			}
			stage := func(i int) catalogs.WriteReceipt {
				batch := sampleBatch(rowsFrom(int64(i)*10, 10, 0))
				defer batch.Release()
				r, err := p.WriteBatch(ctx, id, batch)
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			commit := func(i int) {
				if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stage(i)}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range n {
				commit(i)
			}
			staged := []catalogs.WriteReceipt{stage(-1)}
			if err := p.CheckUnreferenced(ctx, id, staged); err != nil {
				b.Fatal(err) // the first check may fill what the others reuse
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.CheckUnreferenced(ctx, id, staged); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				commit(n + i)
				b.StartTimer()
			}
		})
	}
}
