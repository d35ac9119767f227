// Package arrowconv conforms an incoming Arrow batch to a table's Arrow
// schema: the same columns, in the table's order and types, converting
// only where no value changes meaning. Every backend that writes client
// batches (Iceberg, Paimon) applies this one rule, so that a batch a
// table accepts does not depend on the table's format. Errors are plain
// and name the column; the backend adds the table and the error kind.
package arrowconv

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// Conform checks batch against target and returns a batch with exactly
// target's columns, in target's order and types. Every column must be
// present, none may be extra (unknown(name) is the error for a column not
// in target, which each backend words itself), each type must be
// target's, or the same but for nested field names, metadata and
// nullability, or one that converts without loss of meaning (narrower
// ints, float32, large or view strings and binaries, other timestamp
// units, date64, a wider decimal), and a non-nullable column (or a
// required field of a struct) may hold no null. A timestamp of a finer
// unit than the table's converts only when no value has digits below the
// table's unit (a value that would change is refused, named), unless
// Options.TruncateTime. The caller releases the result. arrow-go may
// panic on a malformed array: the caller recovers.
func Conform(ctx context.Context, target *arrow.Schema, batch arrow.RecordBatch, unknown func(name string) error) (arrow.RecordBatch, error) {
	return ConformWith(ctx, target, batch, unknown, Options{})
}

// Options are the conversions a table allows beyond the lossless ones.
type Options struct {
	// TruncateTime lets a timestamp finer than the table's column lose its
	// extra digits (rounded toward zero, as arrow-go's cast does) instead
	// of being refused.
	TruncateTime bool
}

// ConformWith is Conform with the table's Options.
func ConformWith(ctx context.Context, target *arrow.Schema, batch arrow.RecordBatch, unknown func(name string) error, o Options) (arrow.RecordBatch, error) {
	in := batch.Schema()
	index := make(map[string]int, in.NumFields())
	for i, f := range in.Fields() {
		if _, dup := index[f.Name]; dup {
			return nil, fmt.Errorf("column %q appears twice in the batch", f.Name)
		}
		if target.FieldIndices(f.Name) == nil {
			return nil, unknown(f.Name)
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
			return nil, fmt.Errorf("column %q is missing from the batch", f.Name)
		}
		col, err := column(ctx, f.Name, batch.Column(i), f.Type, o)
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
		if err := checkNulls(f.Name, col, f.Nullable); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(target, cols, batch.NumRows()), nil
}

// column returns col, named name, as type want (a new reference).
func column(ctx context.Context, name string, col arrow.Array, want arrow.DataType, o Options) (arrow.Array, error) {
	have := col.DataType()
	if sameShape(have, want) {
		d := retype(col.Data(), want)
		defer d.Release()
		return array.MakeFromData(d), nil
	}
	if !castable(have, want) {
		return nil, fmt.Errorf("column %q: type %s does not match the table's %s", name, have, want)
	}
	opts := compute.SafeCastOptions(want)
	opts.AllowTimeTruncate = o.TruncateTime
	if !o.TruncateTime {
		if err := lostDigits(name, col, want); err != nil {
			return nil, err
		}
	}
	// On a goroutine of arrow-go's: see internal/recovered's package doc
	// for why its kernels are safe here.
	out, err := compute.CastArray(ctx, col, opts)
	if err != nil {
		return nil, fmt.Errorf("column %q: cannot convert %s to %s: %v", name, have, want, err)
	}
	return out, nil
}

// lostDigits refuses a timestamp column finer than want when a value has
// digits below want's unit, naming the first such value: a write keeps
// every value it acknowledges, and arrow-go's own error says only "would
// lose data".
func lostDigits(name string, col arrow.Array, want arrow.DataType) error {
	ts, ok := col.(*array.Timestamp)
	w, wok := want.(*arrow.TimestampType)
	if !ok || !wok {
		return nil
	}
	h := ts.DataType().(*arrow.TimestampType)
	factor := int64(1)
	for u := w.Unit; u < h.Unit; u++ {
		factor *= 1000
	}
	if factor == 1 {
		return nil
	}
	for i := range ts.Len() {
		if ts.IsValid(i) && int64(ts.Value(i))%factor != 0 {
			return fmt.Errorf("column %q: value %s (row %d) has digits below the table's %s precision: storing it would change it",
				name, ts.ValueStr(i), i, w.Unit)
		}
	}
	return nil
}

// sameShape reports whether have and want have the same physical layout,
// so that only names, metadata and nullability of nested fields differ.
func sameShape(have, want arrow.DataType) bool {
	if have.ID() != want.ID() {
		return false
	}
	switch h := have.(type) {
	case *arrow.ListType:
		return sameShape(h.Elem(), want.(*arrow.ListType).Elem())
	case *arrow.MapType:
		w := want.(*arrow.MapType)
		return sameShape(h.KeyType(), w.KeyType()) && sameShape(h.ItemType(), w.ItemType())
	case *arrow.StructType:
		w := want.(*arrow.StructType)
		if h.NumFields() != w.NumFields() {
			return false
		}
		for i := range h.NumFields() {
			if h.Field(i).Name != w.Field(i).Name || !sameShape(h.Field(i).Type, w.Field(i).Type) {
				return false
			}
		}
		return true
	default:
		return arrow.TypeEqual(have, want)
	}
}

// retype relabels data with an equal-shaped type, recursively. The caller
// releases the result.
func retype(d arrow.ArrayData, want arrow.DataType) arrow.ArrayData {
	children := d.Children()
	var kids []arrow.ArrayData
	switch w := want.(type) {
	case *arrow.ListType:
		kids = []arrow.ArrayData{retype(children[0], w.Elem())}
	case *arrow.MapType:
		kids = []arrow.ArrayData{retype(children[0], w.Elem())}
	case *arrow.StructType:
		kids = make([]arrow.ArrayData, len(children))
		for i, c := range children {
			kids[i] = retype(c, w.Field(i).Type)
		}
	default:
		return array.NewData(want, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	}
	out := array.NewData(want, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset())
	for _, k := range kids {
		k.Release() // NewData holds its own reference
	}
	return out
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

// checkNulls rejects nulls where the schema forbids them: in a required
// column and in the required fields of a struct.
func checkNulls(path string, col arrow.Array, nullable bool) error {
	if !nullable && col.NullN() > 0 {
		return fmt.Errorf("column %q: %d null value(s) in a non-nullable column", path, col.NullN())
	}
	if s, ok := col.(*array.Struct); ok {
		st := s.DataType().(*arrow.StructType)
		for i := range s.NumField() {
			f := st.Field(i)
			if f.Nullable {
				continue
			}
			child := s.Field(i)
			for r := range s.Len() {
				if s.IsValid(r) && child.IsNull(r) {
					return fmt.Errorf("column %q: null value in non-nullable field %q", path, f.Name)
				}
			}
			if err := checkNulls(path+"."+f.Name, child, true); err != nil {
				return err
			}
		}
	}
	return nil
}
