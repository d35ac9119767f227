package starrocks

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
)

// The load headers of every body encodeJSON makes: one JSON array of
// objects keyed by column name, so that escaping is JSON's (exact for
// every string) and a NULL is null. Stream Load does not accept Arrow IPC
// (its formats are CSV and JSON), and JSON needs no delimiter that a value
// could contain.
var jsonHeaders = map[string]string{"format": "json", "strip_outer_array": "true"}

// encodeJSON writes batch as a JSON array of row objects. Its columns
// have passed checkBatch; a value JSON cannot carry (NaN, an infinity) is
// an error naming the column and the row.
func encodeJSON(table catalogs.TableIdent, batch arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(batch.NumRows()) * 16 * int(batch.NumCols()))
	names := make([][]byte, batch.NumCols())
	for i, f := range batch.Schema().Fields() {
		n, _ := json.Marshal(f.Name)
		names[i] = append(n, ':')
	}
	buf.WriteByte('[')
	var scratch []byte
	for r := range int(batch.NumRows()) {
		if r > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('{')
		for i, col := range batch.Columns() {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(names[i])
			var err error
			scratch, err = appendValue(scratch[:0], col, r)
			if err != nil {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q, row %d: %v", table, batch.Schema().Field(i).Name, r, err)
			}
			buf.Write(scratch)
		}
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// appendValue appends the JSON form of one value.
func appendValue(b []byte, col arrow.Array, r int) ([]byte, error) {
	if col.IsNull(r) {
		return append(b, "null"...), nil
	}
	switch a := col.(type) {
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(r)), nil
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(r)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(r)), 10), nil
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(r)), 10), nil
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(r), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(a.Value(r)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(a.Value(r)), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(a.Value(r)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(b, a.Value(r), 10), nil
	case *array.Float32:
		return appendFloat(b, float64(a.Value(r)), 32)
	case *array.Float64:
		return appendFloat(b, a.Value(r), 64)
	case *array.Decimal128:
		// Quoted: StarRocks casts the text to DECIMAL exactly, where a
		// JSON number might pass through a double.
		return appendString(b, a.Value(r).ToString(a.DataType().(*arrow.Decimal128Type).Scale)), nil
	case *array.String:
		return appendString(b, a.Value(r)), nil
	case *array.LargeString:
		return appendString(b, a.Value(r)), nil
	case *array.StringView:
		return appendString(b, a.Value(r)), nil
	case *array.Date32:
		return appendString(b, a.Value(r).ToTime().Format(time.DateOnly)), nil
	case *array.Date64:
		return appendString(b, a.Value(r).ToTime().UTC().Format(time.DateOnly)), nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		// DATETIME has no time zone: a zoned timestamp loads as UTC.
		return appendString(b, a.Value(r).ToTime(unit).UTC().Format("2006-01-02 15:04:05.000000")), nil
	}
	return nil, errUnsupported{col.DataType()}
}

type errUnsupported struct{ t arrow.DataType }

func (e errUnsupported) Error() string { return e.t.String() + " cannot be loaded into StarRocks" }

func appendFloat(b []byte, v float64, bits int) ([]byte, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, errFloat(v)
	}
	return strconv.AppendFloat(b, v, 'g', -1, bits), nil
}

type errFloat float64

func (e errFloat) Error() string {
	return strconv.FormatFloat(float64(e), 'g', -1, 64) + " has no JSON form and cannot be loaded"
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
