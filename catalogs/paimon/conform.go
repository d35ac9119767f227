package paimon

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/flightgw/flightgw/catalogs"
)

// conform checks batch against the table's Arrow schema and returns a
// batch with exactly its columns, in its order and types. Every column
// must be present, none may be extra, each type must be the table's or one
// that converts without loss of meaning (narrower ints, large or view
// strings and binaries, other timestamp units, date64), and a non-nullable
// column may hold no null. Errors are ErrInvalidArgument naming the table
// and the column. The caller releases the result.
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
	in := batch.Schema()
	index := make(map[string]int, in.NumFields())
	for i, f := range in.Fields() {
		if _, dup := index[f.Name]; dup {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q appears twice in the batch", tbl, f.Name)
		}
		if target.FieldIndices(f.Name) == nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", tbl, f.Name)
		}
		index[f.Name] = i
	}
	cols := make([]arrow.Array, 0, target.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, f := range target.Fields() {
		i, ok := index[f.Name]
		if !ok {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is missing from the batch", tbl, f.Name)
		}
		col, err := conformColumn(ctx, f.Name, batch.Column(i), f.Type)
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", tbl, err)
		}
		cols = append(cols, col)
		if !f.Nullable && col.NullN() > 0 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q: %d null value(s) in a non-nullable column", tbl, f.Name, col.NullN())
		}
	}
	return array.NewRecordBatch(target, cols, batch.NumRows()), nil
}

func conformColumn(ctx context.Context, name string, col arrow.Array, want arrow.DataType) (arrow.Array, error) {
	have := col.DataType()
	if arrow.TypeEqual(have, want) {
		col.Retain()
		return col, nil
	}
	if !castable(have, want) {
		return nil, fmt.Errorf("column %q: type %s does not match the table's %s", name, have, want)
	}
	opts := compute.SafeCastOptions(want)
	opts.AllowTimeTruncate = true
	out, err := compute.CastArray(ctx, col, opts)
	if err != nil {
		return nil, fmt.Errorf("column %q: cannot convert %s to %s: %v", name, have, want, err)
	}
	return out, nil
}

// castable lists the conversions a write applies: they keep every value
// (a safe cast fails on overflow) except sub-microsecond digits.
func castable(have, want arrow.DataType) bool {
	isInt := func(t arrow.DataType) bool {
		switch t.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32:
			return true
		}
		return false
	}
	switch want.ID() {
	case arrow.INT16, arrow.INT32, arrow.INT64:
		return isInt(have)
	case arrow.FLOAT64:
		return have.ID() == arrow.FLOAT32
	case arrow.STRING:
		return have.ID() == arrow.LARGE_STRING || have.ID() == arrow.STRING_VIEW
	case arrow.BINARY:
		return have.ID() == arrow.LARGE_BINARY || have.ID() == arrow.BINARY_VIEW
	case arrow.DATE32:
		return have.ID() == arrow.DATE64
	case arrow.TIMESTAMP:
		h, ok := have.(*arrow.TimestampType)
		return ok && (h.TimeZone == "") == (want.(*arrow.TimestampType).TimeZone == "")
	case arrow.DECIMAL128:
		h, ok := have.(arrow.DecimalType)
		w := want.(arrow.DecimalType)
		return ok && h.GetScale() == w.GetScale() && h.GetPrecision() <= w.GetPrecision()
	}
	return false
}
