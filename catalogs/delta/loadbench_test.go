package delta_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String},
}, nil)

// kvBatch is keys [from, from+n) as integration/bench/maintain writes them.
func kvBatch(from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, kvSchema)
	defer b.Release()
	for k := from; k < from+n; k++ {
		b.Field(0).(*array.Int64Builder).Append(int64(k))
		b.Field(1).(*array.StringBuilder).Append("value-" + strconv.Itoa(k))
	}
	return b.NewRecordBatch()
}

// BenchmarkQueryMetadata is the metadata side of issue 27's bench
// (integration/bench/maintain -catalog delta) without the transport or
// the data: what the gateway asks the backend for per query (the
// table's spec when GetFlightInfo and DoGet resolve it, then the scan,
// opened and released unread), on a table of 1,000 auto-commit appends
// after OPTIMIZE and a checkpoint, and on the same rows in one commit
// (go test -run '^$' -bench QueryMetadata -benchtime 200x).
func BenchmarkQueryMetadata(b *testing.B) {
	const appends, rows = 1000, 100
	ctx := context.Background()
	p := openLocal(b, "")
	one, many := ident("default", "one_commit"), ident("default", "appends_on")
	for _, id := range []catalogs.TableIdent{one, many} {
		if _, err := p.CreateTable(ctx, id, kvSchema, nil); err != nil {
			b.Fatal(err)
		}
	}
	s, err := p.OpenStream(ctx, one, catalogs.WriteTxn{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range appends {
		bt := kvBatch(i*rows, rows)
		err := s.Write(ctx, bt)
		bt.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	rs, err := s.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Commit(ctx, one, rs); err != nil {
		b.Fatal(err)
	}
	for i := range appends {
		bt := kvBatch(i*rows, rows)
		r, err := p.WriteBatch(ctx, many, bt)
		bt.Release()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Commit(ctx, many, []catalogs.WriteReceipt{r}); err != nil {
			b.Fatal(err)
		}
	}
	rep, err := p.Maintain(ctx, many, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskOptimize, catalogs.TaskCheckpoint}})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("optimize: %d files into %d", rep.Tasks[0].RewrittenFiles, rep.Tasks[0].AddedFiles)
	for _, id := range []catalogs.TableIdent{one, many} {
		b.Run(id.Name, func(b *testing.B) {
			for b.Loop() {
				for range 2 {
					if _, err := p.GetTableSpec(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
				res, err := p.Scan(ctx, id, catalogs.ScanRequest{})
				if err != nil {
					b.Fatal(err)
				}
				if res.FilesTotal != 1 && id.Name == many.Name {
					b.Fatalf("%d live files after OPTIMIZE", res.FilesTotal)
				}
				res.Reader.Release()
			}
		})
	}
}
