package txn

import (
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
)

// checkUTF8 refuses a batch with a string value that is not UTF-8: one
// such value committed would make every later read of the column fail,
// for every reader of a shared table. first is the row number of the
// batch's first row in the upload, for the message.
func checkUTF8(table catalogs.TableIdent, batch arrow.RecordBatch, first int64) error {
	for i, col := range batch.Columns() {
		name := batch.Schema().Field(i).Name
		if row, ok := validUTF8(col); !ok {
			return catalogs.Errorf(catalogs.ErrInvalidArgument,
				"write into %s: column %q, row %d: string is not valid UTF-8", table, name, first+int64(row))
		}
	}
	return nil
}

// validUTF8 checks every string value in arr and in its children; row is
// the row of arr holding the first invalid value.
func validUTF8(arr arrow.Array) (row int, ok bool) {
	switch a := arr.(type) {
	case *array.String:
		return validOffsets(a, a.ValueOffsets(), a.ValueBytes())
	case *array.LargeString:
		return validOffsets(a, a.ValueOffsets(), a.ValueBytes())
	case *array.StringView:
		for i := range a.Len() {
			if a.IsValid(i) && !utf8.ValidString(a.Value(i)) {
				return i, false
			}
		}
		return 0, true
	case *array.Dictionary:
		if _, ok := validUTF8(a.Dictionary()); ok {
			return 0, true
		}
		for i := range a.Len() {
			if a.IsValid(i) {
				if _, ok := validValue(a.Dictionary(), a.GetValueIndex(i)); !ok {
					return i, false
				}
			}
		}
		return 0, true
	case *array.Struct:
		for f := range a.NumField() {
			if r, ok := validUTF8(a.Field(f)); !ok {
				return r, false
			}
		}
		return 0, true
	case array.ListLike:
		r, ok := validUTF8(a.ListValues())
		if ok {
			return 0, true
		}
		// Find the row whose list holds child value r.
		for i := range a.Len() {
			if start, end := a.ValueOffsets(i); int64(r) >= start && int64(r) < end {
				return i, false
			}
		}
		return 0, false
	}
	return 0, true
}

// validValue checks the one value i of a string array.
func validValue(arr arrow.Array, i int) (int, bool) {
	switch a := arr.(type) {
	case *array.String:
		return i, utf8.ValidString(a.Value(i))
	case *array.LargeString:
		return i, utf8.ValidString(a.Value(i))
	case *array.StringView:
		return i, utf8.ValidString(a.Value(i))
	}
	return i, true
}

// validOffsets checks a string array in one pass over its data: when the
// bytes the values cover are valid UTF-8 as a whole and no value starts on
// a continuation byte, every value is valid on its own. Only when that
// fails are the values checked one by one, nulls skipped.
func validOffsets[T int32 | int64](arr arrow.Array, offsets []T, data []byte) (int, bool) {
	n := arr.Len()
	if n == 0 || len(offsets) < n+1 {
		return 0, true
	}
	lo, hi := offsets[0], offsets[n]
	if lo < 0 || hi < lo || int(hi) > len(data) {
		return 0, true // malformed offsets are the IPC reader's to refuse
	}
	if utf8.Valid(data[lo:hi]) {
		clean := true
		for _, o := range offsets[:n] {
			if o < hi && !utf8.RuneStart(data[o]) {
				clean = false
				break
			}
		}
		if clean {
			return 0, true
		}
	}
	for i := range n {
		if arr.IsNull(i) {
			continue
		}
		s, e := offsets[i], offsets[i+1]
		if s < lo || e < s || e > hi || !utf8.Valid(data[s:e]) {
			return i, false
		}
	}
	return 0, true
}
