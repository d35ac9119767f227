package arrowconv

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Take returns the rows of rec at the given indices, in that order (a new
// batch the caller releases). arrow-go runs the kernel on a goroutine of
// its own, out of a caller's recover: that is safe because the process
// allocator keeps arrow-go's contract (internal/recovered's package doc).
func Take[I ~int | ~int32 | ~int64](ctx context.Context, rec arrow.RecordBatch, rows []I) (arrow.RecordBatch, error) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(len(rows))
	for _, r := range rows {
		b.UnsafeAppend(int64(r))
	}
	idx := b.NewArray()
	defer idx.Release()
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range int(rec.NumCols()) {
		c, err := compute.TakeArray(ctx, rec.Column(i), idx)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(rows))), nil
}
