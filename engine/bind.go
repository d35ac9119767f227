//go:build duckdb_arrow

package engine

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duck "github.com/duckdb/duckdb-go-bindings"
)

// bindParams binds the first row of params to st's parameters, in order.
func bindParams(st duck.PreparedStatement, params arrow.RecordBatch) error {
	want := int(duck.NParams(st))
	if params == nil {
		if want > 0 {
			return errInvalid("the statement has %d parameter(s) but none were bound", want)
		}
		return nil
	}
	if int(params.NumCols()) != want {
		return errInvalid("the statement has %d parameter(s) but %d were bound", want, params.NumCols())
	}
	if want > 0 && params.NumRows() != 1 {
		return errInvalid("a query takes one row of parameters, got %d", params.NumRows())
	}
	for i, col := range params.Columns() {
		if bindOne(st, duck.IdxT(i+1), col, 0) == duck.StateError {
			return errInvalid("parameter %d (%s): %s", i+1, col.DataType(), duck.PrepareError(st))
		}
	}
	return nil
}

// bindOne binds row of col to parameter idx. Types without a direct
// binding are bound as text, which DuckDB casts to the parameter's type.
func bindOne(st duck.PreparedStatement, idx duck.IdxT, col arrow.Array, row int) duck.State {
	if col.IsNull(row) {
		return duck.BindNull(st, idx)
	}
	switch a := col.(type) {
	case *array.Boolean:
		return duck.BindBoolean(st, idx, a.Value(row))
	case *array.Int8:
		return duck.BindInt8(st, idx, a.Value(row))
	case *array.Int16:
		return duck.BindInt16(st, idx, a.Value(row))
	case *array.Int32:
		return duck.BindInt32(st, idx, a.Value(row))
	case *array.Int64:
		return duck.BindInt64(st, idx, a.Value(row))
	case *array.Uint8:
		return duck.BindUInt8(st, idx, a.Value(row))
	case *array.Uint16:
		return duck.BindUInt16(st, idx, a.Value(row))
	case *array.Uint32:
		return duck.BindUInt32(st, idx, a.Value(row))
	case *array.Uint64:
		return duck.BindUInt64(st, idx, a.Value(row))
	case *array.Float32:
		return duck.BindFloat(st, idx, a.Value(row))
	case *array.Float64:
		return duck.BindDouble(st, idx, a.Value(row))
	case *array.String:
		return duck.BindVarchar(st, idx, a.Value(row))
	case *array.LargeString:
		return duck.BindVarchar(st, idx, a.Value(row))
	case *array.Binary:
		return duck.BindBlob(st, idx, a.Value(row))
	case *array.Date32:
		return duck.BindDate(st, idx, duck.NewDate(int32(a.Value(row))))
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		us := int64(a.Value(row)) * int64(unit.Multiplier()) / int64(arrow.Microsecond.Multiplier())
		if a.DataType().(*arrow.TimestampType).TimeZone != "" {
			return duck.BindTimestampTZ(st, idx, duck.NewTimestamp(us))
		}
		return duck.BindTimestamp(st, idx, duck.NewTimestamp(us))
	}
	return duck.BindVarchar(st, idx, col.ValueStr(row))
}
