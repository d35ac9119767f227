package catalogtest

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// KVSchema is the schema of the maintenance benchmark's tables
// (integration/bench/maintain): a key and a string value.
var KVSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String},
}, nil)

// KVBatch is keys [from, from+n) as integration/bench/maintain writes
// them.
func KVBatch(from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, KVSchema)
	defer b.Release()
	for k := from; k < from+n; k++ {
		b.Field(0).(*array.Int64Builder).Append(int64(k))
		b.Field(1).(*array.StringBuilder).Append("value-" + strconv.Itoa(k))
	}
	return b.NewRecordBatch()
}

// SeedProvider is what SeedAppends writes through.
type SeedProvider interface {
	catalogs.Provider
	catalogs.TableManager
	catalogs.StreamWriter
}

// SeedAppends makes the two tables of the maintenance benchmark before
// its maintenance: one and many, both KVSchema, each holding keys
// [0, appends*rows); one written in one stream and one commit, many in
// appends auto-commits of rows keys each.
func SeedAppends(tb testing.TB, p SeedProvider, one, many catalogs.TableIdent, appends, rows int) {
	tb.Helper()
	ctx := context.Background()
	for _, id := range []catalogs.TableIdent{one, many} {
		if _, err := p.CreateTable(ctx, id, KVSchema, nil); err != nil {
			tb.Fatal(err)
		}
	}
	s, err := p.OpenStream(ctx, one, catalogs.WriteTxn{})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range appends {
		bt := KVBatch(i*rows, rows)
		err := s.Write(ctx, bt)
		bt.Release()
		if err != nil {
			tb.Fatal(err)
		}
	}
	rs, err := s.Close(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := p.Commit(ctx, one, rs); err != nil {
		tb.Fatal(err)
	}
	for i := range appends {
		bt := KVBatch(i*rows, rows)
		r, err := p.WriteBatch(ctx, many, bt)
		bt.Release()
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := p.Commit(ctx, many, []catalogs.WriteReceipt{r}); err != nil {
			tb.Fatal(err)
		}
	}
}
