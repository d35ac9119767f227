package flightsql

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/flightframe"
)

// normalize is the type the gateway plans an upstream column as: the
// types other Flight SQL servers send for the same values are folded
// into the one the engine and the clients know (string views and large
// strings as Utf8, Date64 as Date32, ...). Results are cast back to it.
func normalize(t arrow.DataType) arrow.DataType {
	switch t.ID() {
	case arrow.STRING_VIEW, arrow.LARGE_STRING:
		return arrow.BinaryTypes.String
	case arrow.BINARY_VIEW, arrow.LARGE_BINARY:
		return arrow.BinaryTypes.Binary
	case arrow.DATE64:
		return arrow.FixedWidthTypes.Date32
	case arrow.LIST, arrow.LARGE_LIST, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW:
		elem := t.(arrow.ListLikeType).ElemField()
		elem.Type = normalize(elem.Type)
		return arrow.ListOfField(elem)
	}
	return t
}

// normalizeSchema applies normalize to every column.
func normalizeSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		f.Type = normalize(f.Type)
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil)
}

// castReader converts each batch of an upstream result to the planned
// schema, column by column by position. A column whose values do not
// convert (an overflow, a type with no conversion) fails the read naming
// the column; nothing is converted silently with a loss.
type castReader struct {
	src    array.RecordReader
	schema *arrow.Schema
	what   string
	cur    arrow.RecordBatch
	err    error
	refs   atomic.Int64
}

// castTo wraps src so that it yields schema. It fails at once when the
// column count differs.
func castTo(src array.RecordReader, schema *arrow.Schema, what string) (array.RecordReader, error) {
	if got := src.Schema().NumFields(); got != schema.NumFields() {
		src.Release()
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "%s: the upstream answered with %d columns, the engine expects %d", what, got, schema.NumFields())
	}
	for i, f := range src.Schema().Fields() {
		want := schema.Field(i).Type
		if !arrow.TypeEqual(f.Type, want) && !compute.CanCast(f.Type, want) {
			src.Release()
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "%s: column %q: the upstream sends %s, which does not convert to the planned %s", what, schema.Field(i).Name, f.Type, want)
		}
	}
	r := &castReader{src: src, schema: schema, what: what}
	r.refs.Store(1)
	return r, nil
}

func (r *castReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil || !r.src.Next() {
		return false
	}
	in := r.src.RecordBatch()
	if b, ok := in.(*flightframe.Batch); ok {
		if sameTypes(b.Schema(), r.schema) {
			// Relayed as received, typed as planned (names, metadata).
			r.cur = b.WithSchema(r.schema)
			return true
		}
		if err := b.Decode(); err != nil {
			r.err = catalogs.Errorf(catalogs.ErrFailedPrecondition, "%s: a batch the upstream sent does not decode: %v", r.what, err)
			return false
		}
	}
	cols := make([]arrow.Array, in.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, col := range in.Columns() {
		want := r.schema.Field(i).Type
		if arrow.TypeEqual(col.DataType(), want) {
			col.Retain()
			cols[i] = col
			continue
		}
		out, err := compute.CastArray(context.Background(), col, compute.SafeCastOptions(want))
		if err != nil {
			r.err = catalogs.Errorf(catalogs.ErrFailedPrecondition, "%s: column %q: a value the upstream sent as %s does not convert to the planned %s: %v",
				r.what, r.schema.Field(i).Name, col.DataType(), want, err)
			return false
		}
		cols[i] = out
	}
	r.cur = array.NewRecordBatch(r.schema, cols, in.NumRows())
	return true
}

// sameTypes reports whether a and b have the same column types, in
// order (names and metadata aside).
func sameTypes(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

func (r *castReader) Schema() *arrow.Schema          { return r.schema }
func (r *castReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record implements array.RecordReader.
//
// Deprecated: use RecordBatch.
func (r *castReader) Record() arrow.RecordBatch { return r.cur }
func (r *castReader) Retain()                   { r.refs.Add(1) }

func (r *castReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.src.Err()
}

func (r *castReader) Release() {
	if r.refs.Add(-1) == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		r.src.Release()
	}
}
