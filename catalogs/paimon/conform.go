package paimon

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	pre, err := paimonRounding(target, batch)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", tbl, err)
	}
	defer pre.Release()
	out, err = arrowconv.Conform(ctx, target, pre, func(name string) error {
		return fmt.Errorf("column %q is not in the table", name)
	})
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", tbl, err)
	}
	return out, nil
}

// paimonRounding converts, before arrowconv.Conform, the columns Paimon
// converts otherwise than a cast does: a timestamp finer than the
// table's column rounds down (Paimon's Timestamp.toMicros and
// toEpochMillis floor, so an instant before 1970 does not move forward
// across a second, day or year), and decimal32/decimal64 widen to the
// table's decimal128 exactly (arrow-go has no such cast). It returns
// batch itself (retained) when no column needs it.
func paimonRounding(target *arrow.Schema, batch arrow.RecordBatch) (arrow.RecordBatch, error) {
	var cols []arrow.Array
	for i, f := range batch.Schema().Fields() {
		is := target.FieldIndices(f.Name)
		if len(is) != 1 {
			continue
		}
		want := target.Field(is[0]).Type
		var c arrow.Array
		switch h := f.Type.(type) {
		case *arrow.TimestampType:
			w, ok := want.(*arrow.TimestampType)
			if !ok || unitNanos(h.Unit) >= unitNanos(w.Unit) {
				continue
			}
			c = floorTimestamps(batch.Column(i).(*array.Timestamp), &arrow.TimestampType{Unit: w.Unit, TimeZone: h.TimeZone}, unitNanos(w.Unit)/unitNanos(h.Unit))
		case *arrow.Decimal32Type, *arrow.Decimal64Type:
			w, ok := want.(*arrow.Decimal128Type)
			if !ok || w.Scale != h.(arrow.DecimalType).GetScale() {
				continue
			}
			c = widenDecimal(batch.Column(i), &arrow.Decimal128Type{Precision: h.(arrow.DecimalType).GetPrecision(), Scale: w.Scale})
		default:
			continue
		}
		if cols == nil {
			cols = slices.Clone(batch.Columns())
			for _, x := range cols {
				x.Retain()
			}
		}
		cols[i].Release()
		cols[i] = c
	}
	if cols == nil {
		batch.Retain()
		return batch, nil
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	fs := slices.Clone(batch.Schema().Fields())
	for i := range fs {
		fs[i].Type = cols[i].DataType()
	}
	return array.NewRecordBatch(arrow.NewSchema(fs, nil), cols, batch.NumRows()), nil
}

func unitNanos(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1_000_000_000
	case arrow.Millisecond:
		return 1_000_000
	case arrow.Microsecond:
		return 1_000
	}
	return 1
}

// floorTimestamps divides every value by div rounding toward negative
// infinity, typed dt.
func floorTimestamps(a *array.Timestamp, dt *arrow.TimestampType, div int64) arrow.Array {
	b := array.NewTimestampBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.Append(arrow.Timestamp(floorDiv(int64(a.Value(i)), div)))
	}
	return b.NewArray()
}

// widenDecimal converts a decimal32 or decimal64 array to decimal128 of
// the same precision and scale.
func widenDecimal(a arrow.Array, dt *arrow.Decimal128Type) arrow.Array {
	b := array.NewDecimal128Builder(memory.DefaultAllocator, dt)
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		switch c := a.(type) {
		case *array.Decimal32:
			b.Append(decimal128.FromI64(int64(c.Value(i))))
		case *array.Decimal64:
			b.Append(decimal128.FromI64(int64(c.Value(i))))
		}
	}
	return b.NewArray()
}
