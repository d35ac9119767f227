package paimon

import (
	"bytes"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// value returns row i of a (a column of the table's Arrow type) as the Go
// value codec/paimon's BuildRow takes for type t, nil for null.
func value(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i)
	case *array.Int8:
		return c.Value(i)
	case *array.Int16:
		return c.Value(i)
	case *array.Int32:
		return c.Value(i)
	case *array.Int64:
		return c.Value(i)
	case *array.Float32:
		return c.Value(i)
	case *array.Float64:
		return c.Value(i)
	case *array.String:
		return c.Value(i)
	case *array.Binary:
		return c.Value(i)
	case *array.FixedSizeBinary:
		return c.Value(i)
	case *array.Date32:
		return int32(c.Value(i))
	case *array.Decimal128:
		dt := c.DataType().(*arrow.Decimal128Type)
		return pcodec.Decimal{Unscaled: c.Value(i).BigInt(), Precision: int(dt.Precision), Scale: int(dt.Scale)}
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return timestampOf(int64(c.Value(i)), unit)
	}
	return nil
}

// timestampOf converts an Arrow timestamp to Paimon's millis + nanos.
func timestampOf(v int64, unit arrow.TimeUnit) pcodec.Timestamp {
	var nanosPer int64
	switch unit {
	case arrow.Second:
		return pcodec.Timestamp{Millis: v * 1000}
	case arrow.Millisecond:
		return pcodec.Timestamp{Millis: v}
	case arrow.Microsecond:
		nanosPer = 1000
	default:
		nanosPer = 1
	}
	perMilli := 1_000_000 / nanosPer
	ms := floorDiv(v, perMilli)
	return pcodec.Timestamp{Millis: ms, NanoOfMillis: int32((v - ms*perMilli) * nanosPer)}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// compare orders two non-null values of one column type.
func compare(a, b any) int {
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case int8:
		return cmp3(int64(x), int64(b.(int8)))
	case int16:
		return cmp3(int64(x), int64(b.(int16)))
	case int32:
		return cmp3(int64(x), int64(b.(int32)))
	case int64:
		return cmp3(x, b.(int64))
	case float32:
		return cmpFloat(float64(x), float64(b.(float32)))
	case float64:
		return cmpFloat(x, b.(float64))
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case pcodec.Decimal:
		return x.Unscaled.Cmp(b.(pcodec.Decimal).Unscaled)
	case pcodec.Timestamp:
		y := b.(pcodec.Timestamp)
		if c := cmp3(x.Millis, y.Millis); c != 0 {
			return c
		}
		return cmp3(int64(x.NanoOfMillis), int64(y.NanoOfMillis))
	}
	return 0
}

func cmp3(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// colStats accumulates one column's min, max and null count in a file,
// as Paimon's default stats mode truncate(16) keeps them.
type colStats struct {
	min, max any
	nulls    int64
	skip     bool // a type whose min and max Paimon does not keep
}

// statsTruncate is the prefix length of string stats in Paimon's default
// metadata.stats-mode, truncate(16).
const statsTruncate = 16

func newColStats(dt arrow.DataType) colStats {
	switch dt.ID() {
	case arrow.BINARY, arrow.FIXED_SIZE_BINARY:
		return colStats{skip: true}
	}
	return colStats{}
}

// add folds column a (rows [0, n)) into the stats.
func (s *colStats) add(a arrow.Array) {
	s.nulls += int64(a.NullN())
	if s.skip || a.NullN() == a.Len() {
		return
	}
	switch c := a.(type) {
	case *array.Int64:
		if lo, hi, ok := extremes(c, c.Int64Values()); ok {
			s.fold(c.Value(lo), c.Value(hi))
		}
		return
	case *array.Int32:
		if lo, hi, ok := extremes(c, c.Int32Values()); ok {
			s.fold(c.Value(lo), c.Value(hi))
		}
		return
	case *array.Float64:
		if mn, mx, ok := floatRange(c, c.Float64Values()); ok {
			s.fold(mn, mx)
		}
		return
	case *array.Float32:
		if mn, mx, ok := floatRange(c, c.Float32Values()); ok {
			s.fold(mn, mx)
		}
		return
	case *array.Date32:
		if lo, hi, ok := extremes(c, c.Date32Values()); ok {
			s.fold(value(c, lo), value(c, hi))
		}
		return
	case *array.Timestamp:
		// Paimon's timestamp order is the raw value's (one unit).
		if lo, hi, ok := extremes(c, c.TimestampValues()); ok {
			s.fold(value(c, lo), value(c, hi))
		}
		return
	case *array.String:
		var mn, mx string
		ok := false
		for i := range c.Len() {
			if !c.IsValid(i) {
				continue
			}
			v := c.Value(i)
			if !ok || v < mn {
				mn = v
			}
			if !ok || v > mx {
				mx = v
			}
			ok = true
		}
		if ok {
			s.fold(strings.Clone(mn), strings.Clone(mx))
		}
		return
	}
	for i := range a.Len() {
		v := value(a, i)
		if v == nil {
			continue
		}
		if f, ok := v.(float64); ok && math.IsNaN(f) {
			continue
		}
		if f, ok := v.(float32); ok && math.IsNaN(float64(f)) {
			continue
		}
		s.fold(v, v)
	}
}

// floatRange is the min and max of the valid values of a that are not
// NaN (which Paimon leaves out of the stats); ok false when there is none.
func floatRange[T float32 | float64](a arrow.Array, vs []T) (mn, mx T, ok bool) {
	for i, v := range vs {
		if v != v || !a.IsValid(i) {
			continue
		}
		if !ok || v < mn {
			mn = v
		}
		if !ok || v > mx {
			mx = v
		}
		ok = true
	}
	return mn, mx, ok
}

// extremes is the positions of the least and the greatest valid values
// of a (the first of equal ones); ok false when there is none.
func extremes[T int32 | int64 | arrow.Date32 | arrow.Timestamp](a arrow.Array, vs []T) (lo, hi int, ok bool) {
	for i, v := range vs {
		if !a.IsValid(i) {
			continue
		}
		if !ok || v < vs[lo] {
			lo = i
		}
		if !ok || v > vs[hi] {
			hi = i
		}
		ok = true
	}
	return lo, hi, ok
}

func (s *colStats) fold(mn, mx any) {
	if s.min == nil || compare(mn, s.min) < 0 {
		s.min = mn
	}
	if s.max == nil || compare(mx, s.max) > 0 {
		s.max = mx
	}
}

// bounds returns the stats' min and max as Paimon stores them: strings
// cut to 16 code points, the max then rounded up (its last code point
// incremented) so that it still bounds every value; nil when unknown.
func (s *colStats) bounds() (any, any) {
	mn, mx := s.min, s.max
	if str, ok := mn.(string); ok {
		mn = truncateString(str)
	}
	if str, ok := mx.(string); ok && utf8.RuneCountInString(str) > statsTruncate {
		rs := []rune(str)[:statsTruncate]
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i] < utf8.MaxRune && (rs[i] < 0xD7FF || rs[i] >= 0xE000) {
				rs[i]++
				mx = string(rs[:i+1])
				return mn, mx
			}
		}
		mx = nil
	}
	return mn, mx
}

func truncateString(s string) string {
	if utf8.RuneCountInString(s) <= statsTruncate {
		return s
	}
	return string([]rune(s)[:statsTruncate])
}

// statsRow builds a SimpleStats of columns from their accumulated stats.
func statsRow(types []pcodec.Type, cs []colStats) (pcodec.Stats, error) {
	mins, maxs := make([]any, len(cs)), make([]any, len(cs))
	nulls := make([]*int64, len(cs))
	for i := range cs {
		mins[i], maxs[i] = cs[i].bounds()
		n := cs[i].nulls
		nulls[i] = &n
	}
	mn, err := pcodec.BuildRow(types, mins)
	if err != nil {
		return pcodec.Stats{}, err
	}
	mx, err := pcodec.BuildRow(types, maxs)
	if err != nil {
		return pcodec.Stats{}, err
	}
	return pcodec.Stats{MinValues: mn, MaxValues: mx, NullCounts: nulls}, nil
}
