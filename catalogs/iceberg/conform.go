package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/arrowconv"
)

// conform checks batch against the table's Arrow schema (target, with field
// ids) and returns a batch with exactly target's columns, in target's order
// and types (arrowconv.Conform). Every column must be present, none may be
// extra, each type must be the table's or one that converts without loss
// of meaning (narrower ints, large strings, other timestamp units), and a
// non-nullable column may hold no null. Errors are ErrInvalidArgument and
// name the column. The caller releases the result.
func conform(ctx context.Context, tbl string, target *arrow.Schema, batch arrow.RecordBatch) (out arrow.RecordBatch, err error) {
	if batch == nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: batch is nil", tbl)
	}
	err = protect(catalogs.ErrInvalidArgument, fmt.Sprintf("table %s: batch", tbl), func() error {
		out, err = arrowconv.Conform(ctx, target, batch, func(name string) error {
			return fmt.Errorf("column %q is not in the table (columns: %v)", name, columnNames(target))
		})
		if err != nil {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", tbl, err)
		}
		return nil
	})
	return out, err
}
