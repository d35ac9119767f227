package paimon_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/benchdata"
)

// benchSchema is integration/bench/paimon's: about 44 bytes a row, its
// columns nullable (as a pyarrow table's are) with no nulls.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
}, nil)

func benchBatches(n, rows int) []arrow.RecordBatch {
	return benchdata.Batches(benchSchema, n, rows)
}

// BenchmarkStreamWrite is the write path of an ingest into an append
// table (bucket -1) without the transport: 5M rows in batches of 65536
// through OpenStream, Write and Close (go test -bench StreamWrite
// -benchtime 3x).
func BenchmarkStreamWrite(b *testing.B) {
	const batches, rows = 77, 65536
	pool := benchBatches(16, rows)
	p, _ := openLocal(b, nil)
	ctx := context.Background()
	b.SetBytes(int64(batches * rows * 44))
	cpu0 := benchdata.CPUTime()
	defer func() { b.ReportMetric((benchdata.CPUTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op") }()
	for i := 0; b.Loop(); i++ {
		id := catalogs.TableIdent{Catalog: p.Name(), Namespace: []string{"default"}, Name: fmt.Sprint("bench", i)}
		if _, err := p.CreateTable(ctx, id, benchSchema, nil); err != nil {
			b.Fatal(err)
		}
		ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			b.Fatal(err)
		}
		for j := range batches {
			if err := ws.Write(ctx, pool[j%len(pool)]); err != nil {
				b.Fatal(err)
			}
		}
		rs, err := ws.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			var size uint64
			for _, r := range rs {
				size += r.ByteCount
			}
			b.Logf("%d receipts, %d bytes", len(rs), size)
		}
	}
}
