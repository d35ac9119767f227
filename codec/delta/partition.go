package delta

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Partition value serialization (PROTOCOL.md appendix). Values are strings in the log; an
// empty string of any type is a null. Escaping belongs to directory names only
// (PartitionDir), never to the values in partitionValues.

// PartitionValue is a typed partition value as ParsePartitionValue returns it:
//
//	nil (null), string, int8, int16, int32, int64, float32, float64, bool, []byte,
//	Date (days since the epoch), Timestamp (microseconds since the epoch, UTC for
//	timestamp, wall clock for timestamp_ntz), decimal128.Num (unscaled, at the type's scale).
type PartitionValue any

// Date is days since 1970-01-01.
type Date int32

// Timestamp is microseconds since 1970-01-01 00:00:00.
type Timestamp int64

const (
	dateLayout  = "2006-01-02"
	tsLayout    = "2006-01-02 15:04:05.999999"
	tsISOLayout = "2006-01-02T15:04:05.999999Z07:00"
	// tsWriteLayout is the ISO 8601 UTC form the protocol recommends writers use.
	tsWriteLayout = "2006-01-02T15:04:05.000000Z"
	ntzLayout     = "2006-01-02 15:04:05.000000"
)

// ParsePartitionValue reads the serialized partition value s (nil for a JSON null) of a
// column of type t. Timestamps without a zone are read as UTC: the protocol says they are
// in the writing system's zone, which a reader cannot know; every writer we know of
// writes UTC.
func ParsePartitionValue(t DataType, s *string) (PartitionValue, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	p, ok := t.(*PrimitiveType)
	if !ok {
		return nil, fmt.Errorf("%w: partition column of type %s: only primitive types partition", ErrMalformed, t)
	}
	v := *s
	bad := func(err error) (PartitionValue, error) {
		return nil, fmt.Errorf("%w: partition value %q is not a %s: %v", ErrMalformed, v, p, err)
	}
	switch p.Name {
	case "string":
		return v, nil
	case "binary":
		return []byte(v), nil
	case "boolean":
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return bad(fmt.Errorf("want true or false"))
	case "byte", "short", "integer", "long":
		bits := map[string]int{"byte": 8, "short": 16, "integer": 32, "long": 64}[p.Name]
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return bad(err)
		}
		switch bits {
		case 8:
			return int8(n), nil
		case 16:
			return int16(n), nil
		case 32:
			return int32(n), nil
		}
		return n, nil
	case "float", "double":
		bits := 64
		if p.Name == "float" {
			bits = 32
		}
		f, err := strconv.ParseFloat(v, bits) // also reads Java's NaN, Infinity, 1.0E10
		if err != nil {
			return bad(err)
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case "date":
		d, err := time.Parse(dateLayout, v)
		if err != nil {
			return bad(err)
		}
		return Date(d.Unix() / 86400), nil
	case "timestamp", "timestamp_ntz":
		ts, err := time.Parse(tsLayout, v)
		if err != nil && p.Name == "timestamp" {
			ts, err = time.Parse(tsISOLayout, v)
		}
		if err != nil {
			return bad(err)
		}
		return Timestamp(ts.Unix()*1e6 + int64(ts.Nanosecond()/1e3)), nil
	case "decimal":
		n, err := parseDecimal(v, p.Precision, p.Scale)
		if err != nil {
			return bad(err)
		}
		return n, nil
	}
	return nil, fmt.Errorf("%w: type %s cannot be a partition column", ErrMalformed, p)
}

// parseDecimal reads a decimal in plain or scientific notation (Java's BigDecimal.toString
// writes 1E-7) exactly, refusing digits beyond the scale or the precision.
func parseDecimal(v string, precision, scale int) (decimal128.Num, error) {
	r, ok := new(big.Rat).SetString(v)
	if !ok || strings.ContainsAny(v, "/") {
		return decimal128.Num{}, fmt.Errorf("not a decimal number")
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return decimal128.Num{}, fmt.Errorf("more than %d digits after the point", scale)
	}
	u := r.Num()
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	if new(big.Int).Abs(u).Cmp(limit) >= 0 {
		return decimal128.Num{}, fmt.Errorf("more than %d digits", precision)
	}
	return decimal128.FromBigInt(u), nil
}

// FormatPartitionValue serializes a typed value (the types ParsePartitionValue returns) of
// a column of type t. A null, and an empty string or binary, serialize as null: the
// protocol reads an empty string as null, so writing one would change nothing but the bytes.
// Binary values must be valid UTF-8, since the log holds them as a JSON string.
func FormatPartitionValue(t DataType, v PartitionValue) (*string, error) {
	p, ok := t.(*PrimitiveType)
	if !ok {
		return nil, fmt.Errorf("partition column of type %s: only primitive types partition", t)
	}
	str := func(s string) (*string, error) {
		if s == "" {
			return nil, nil
		}
		return &s, nil
	}
	wrong := func() (*string, error) {
		return nil, fmt.Errorf("partition value %v (%T) is not a %s", v, v, p)
	}
	if v == nil {
		return nil, nil
	}
	switch p.Name {
	case "string":
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		return str(s)
	case "binary":
		b, ok := v.([]byte)
		if !ok {
			return wrong()
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("binary partition value %x is not valid UTF-8 and has no serialization", b)
		}
		return str(string(b))
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return wrong()
		}
		return str(strconv.FormatBool(b))
	case "byte", "short", "integer", "long":
		var n int64
		switch x := v.(type) {
		case int8:
			n = int64(x)
		case int16:
			n = int64(x)
		case int32:
			n = int64(x)
		case int64:
			n = x
		default:
			return wrong()
		}
		return str(strconv.FormatInt(n, 10))
	case "float", "double":
		var f float64
		bits := 64
		switch x := v.(type) {
		case float32:
			f, bits = float64(x), 32
		case float64:
			f = x
		default:
			return wrong()
		}
		// Java spells infinities "Infinity"; Go's "+Inf" would not parse there.
		switch {
		case math.IsInf(f, 1):
			return str("Infinity")
		case math.IsInf(f, -1):
			return str("-Infinity")
		}
		return str(strconv.FormatFloat(f, 'g', -1, bits))
	case "date":
		d, ok := v.(Date)
		if !ok {
			return wrong()
		}
		return str(time.Unix(int64(d)*86400, 0).UTC().Format(dateLayout))
	case "timestamp", "timestamp_ntz":
		ts, ok := v.(Timestamp)
		if !ok {
			return wrong()
		}
		tm := time.UnixMicro(int64(ts)).UTC()
		if p.Name == "timestamp" {
			return str(tm.Format(tsWriteLayout))
		}
		return str(tm.Format(ntzLayout))
	case "decimal":
		n, ok := v.(decimal128.Num)
		if !ok {
			return wrong()
		}
		return str(formatDecimal(n, p.Scale))
	}
	return nil, fmt.Errorf("type %s cannot be a partition column", p)
}

// formatDecimal writes the plain form, never scientific notation.
func formatDecimal(n decimal128.Num, scale int) string {
	u := n.BigInt()
	neg := u.Sign() < 0
	digits := new(big.Int).Abs(u).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// HiveNull is the directory name of a null partition value.
const HiveNull = "__HIVE_DEFAULT_PARTITION__"

// PartitionDir builds the conventional partition directory `col=value/...` for the given
// columns and serialized values, escaping as Spark's escapePathName does (so `a=b` is
// `a%3Db`); the result is a file path, which EncodePath turns into the URI an add action
// holds. Directory names are a convention only: readers take values from the log.
func PartitionDir(cols []string, values map[string]*string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(escapePathName(c))
		b.WriteByte('=')
		if v := values[c]; v == nil || *v == "" {
			b.WriteString(HiveNull)
		} else {
			b.WriteString(escapePathName(*v))
		}
	}
	return b.String()
}

// escapePathName percent-encodes the characters Spark's ExternalCatalogUtils escapes in
// partition directory names.
func escapePathName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7F || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
