package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/arrowconv"
)

// conform checks batch against the table's Arrow schema (target, with field
// ids) and returns a batch with exactly target's columns, in target's order
// and types (arrowconv.Conform). Every column must be present, none may be
// extra, each type must be the table's or one that converts without loss
// of meaning (narrower ints, large strings, other timestamp units), and a
// non-nullable column may hold no null. A finer timestamp than the
// column's converts only without loss, unless the table's property
// PropTruncateNanos is true. Errors are ErrInvalidArgument and name the
// column. The caller releases the result.
func conform(ctx context.Context, tbl string, target *arrow.Schema, props ice.Properties, batch arrow.RecordBatch) (out arrow.RecordBatch, err error) {
	if batch == nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: batch is nil", tbl)
	}
	err = protect(catalogs.ErrInvalidArgument, fmt.Sprintf("table %s: batch", tbl), func() error {
		out, err = arrowconv.ConformWith(ctx, target, batch, func(name string) error {
			return fmt.Errorf("column %q is not in the table (columns: %v)", name, columnNames(target))
		}, arrowconv.Options{TruncateTime: props.GetBool(PropTruncateNanos, false)})
		if err != nil {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", tbl, err)
		}
		return nil
	})
	return out, err
}

// PropTruncateNanos is the table property (set at create, as an ingest
// option) that lets a write into a timestamp column of microseconds drop
// the sub-microsecond digits of nanosecond values, as pyiceberg's
// downcast-ns-timestamp-to-us-on-write does. Without it such a value is
// refused, naming it; a table of format version 3 keeps nanoseconds.
const PropTruncateNanos = "flightgw.write.truncate-timestamp-nanos"
