package paimon

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/arrowconv"
)

// conform checks batch against the table's Arrow schema and returns a
// batch with exactly its columns, in its order and types
// (arrowconv.Conform). Every column must be present, none may be extra,
// each type must be the table's or one that converts without loss of
// meaning (narrower ints, large or view strings and binaries, other
// timestamp units, date64), and a non-nullable column may hold no null.
// Errors are ErrInvalidArgument naming the table and the column. The
// caller releases the result.
func conform(ctx context.Context, tbl string, target *arrow.Schema, batch arrow.RecordBatch) (out arrow.RecordBatch, err error) {
	if batch == nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: batch is nil", tbl)
	}
	defer func() {
		// arrow-go panics on some malformed arrays: a client fault, not a
		// crash.
		if r := recover(); r != nil {
			out, err = nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: malformed batch: %v", tbl, r)
		}
	}()
	out, err = arrowconv.Conform(ctx, target, batch, func(name string) error {
		return fmt.Errorf("column %q is not in the table", name)
	})
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", tbl, err)
	}
	return out, nil
}
