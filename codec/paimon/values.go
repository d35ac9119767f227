package paimon

import (
	"fmt"
	"math"
	"math/big"
)

// Decimal is a DECIMAL value: Unscaled × 10^-Scale.
type Decimal struct {
	Unscaled  *big.Int
	Precision int
	Scale     int
}

func compactDecimal(v int64, precision, scale int) Decimal {
	return Decimal{Unscaled: big.NewInt(v), Precision: precision, Scale: scale}
}

// bigDecimal decodes BigInteger.toByteArray bytes: big-endian two's complement.
func bigDecimal(b []byte, precision, scale int, field string) (Decimal, error) {
	if len(b) == 0 || len(b) > 16 {
		return Decimal{}, malformed(field, "decimal of %d bytes, want 1 to 16", len(b))
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return Decimal{Unscaled: v, Precision: precision, Scale: scale}, nil
}

// String renders the decimal in plain notation, as Java's BigDecimal.toPlainString.
func (d Decimal) String() string {
	if d.Unscaled == nil {
		return "0"
	}
	s := new(big.Int).Abs(d.Unscaled).String()
	neg := d.Unscaled.Sign() < 0
	if d.Scale > 0 {
		for len(s) <= d.Scale {
			s = "0" + s
		}
		s = s[:len(s)-d.Scale] + "." + s[len(s)-d.Scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// ParseDecimal parses a plain decimal string at the given precision and scale; it
// refuses digits beyond the scale rather than rounding them away.
func ParseDecimal(s string, precision, scale int) (Decimal, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Decimal{}, fmt.Errorf("paimon: decimal %q is not a number", s)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return Decimal{}, fmt.Errorf("paimon: decimal %q has more than %d digits after the point", s, scale)
	}
	u := new(big.Int).Set(r.Num())
	if len(new(big.Int).Abs(u).String()) > precision && u.Sign() != 0 {
		return Decimal{}, fmt.Errorf("paimon: decimal %q exceeds precision %d", s, precision)
	}
	return Decimal{Unscaled: u, Precision: precision, Scale: scale}, nil
}

// unscaledBytes is BigInteger.toByteArray: the shortest big-endian two's complement.
func (d Decimal) unscaledBytes() []byte {
	v := d.Unscaled
	if v.Sign() >= 0 {
		b := v.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	n := (v.BitLen() + 8) / 8 // room for the sign bit
	m := new(big.Int).Add(v, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	b := m.Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	// Drop redundant leading 0xff bytes, as toByteArray does.
	for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
		b = b[1:]
	}
	return b
}

// Timestamp is a TIMESTAMP or TIMESTAMP_LTZ value: epoch milliseconds and the
// nanoseconds within that millisecond (always 0 at precision 3 or less).
type Timestamp struct {
	Millis       int64 `json:"millis"`
	NanoOfMillis int32 `json:"nanoOfMillis"`
}

// MapEntry is one key and value of a MAP value.
type MapEntry struct {
	Key, Value any
}

// Get reads field pos as a Go value of type t: nil for null, bool, int8, int16, int32
// (INT, DATE, TIME), int64, float32, float64, string, []byte, Decimal, Timestamp, []any
// for ARRAY and ROW, []MapEntry for MAP.
func (r Row) Get(pos int, t Type) (any, error) {
	if err := r.check(pos); err != nil {
		return nil, err
	}
	if r.IsNullAt(pos) {
		return nil, nil
	}
	switch t.Kind {
	case KindBoolean:
		return r.Boolean(pos)
	case KindTinyInt:
		return r.TinyInt(pos)
	case KindSmallInt:
		return r.SmallInt(pos)
	case KindInt, KindDate, KindTime:
		return r.Int(pos)
	case KindBigInt:
		return r.BigInt(pos)
	case KindFloat:
		return r.Float(pos)
	case KindDouble:
		return r.Double(pos)
	case KindString:
		return r.String(pos)
	case KindBytes:
		b, err := r.Binary(pos)
		return append([]byte{}, b...), err
	case KindDecimal:
		return r.Decimal(pos, t.Precision, t.Scale)
	case KindTimestamp, KindTimestampLTZ:
		return r.Timestamp(pos, t.Precision)
	case KindArray:
		a, err := r.Array(pos)
		if err != nil {
			return nil, err
		}
		return a.Values(*t.Elem)
	case KindMap:
		m, err := r.Map(pos)
		if err != nil {
			return nil, err
		}
		return m.Entries(*t.Key, *t.Val)
	case KindRow:
		n, err := r.Row(pos, len(t.Fields))
		if err != nil {
			return nil, err
		}
		return n.Values(t.Fields)
	}
	return nil, fmt.Errorf("paimon: field %d: unsupported type %v", pos, t)
}

// Values reads every field with the given types; the count must match the arity.
func (r Row) Values(types []Type) ([]any, error) {
	if len(types) != r.arity {
		return nil, fmt.Errorf("paimon: row of arity %d read with %d types: %w", r.arity, len(types), ErrMalformed)
	}
	out := make([]any, r.arity)
	for i, t := range types {
		v, err := r.Get(i, t)
		if err != nil {
			return nil, fmt.Errorf("paimon: field %d (%v): %w", i, t, err)
		}
		out[i] = v
	}
	return out, nil
}

// Get reads element i as a Go value of type t (see Row.Get).
func (a Array) Get(i int, t Type) (any, error) {
	o, err := a.elem(i, t.elemSize())
	if err != nil {
		return nil, err
	}
	if a.IsNullAt(i) {
		return nil, nil
	}
	d := a.data
	field := fmt.Sprintf("element %d", i)
	switch t.Kind {
	case KindBoolean:
		return d[o] != 0, nil
	case KindTinyInt:
		return int8(d[o]), nil
	case KindSmallInt:
		return int16(le.Uint16(d[o:])), nil
	case KindInt, KindDate, KindTime:
		return int32(le.Uint32(d[o:])), nil
	case KindBigInt:
		return int64(le.Uint64(d[o:])), nil
	case KindFloat:
		return math.Float32frombits(le.Uint32(d[o:])), nil
	case KindDouble:
		return math.Float64frombits(le.Uint64(d[o:])), nil
	case KindString:
		b, err := readVarLen(d, o, "element", i, true)
		return string(b), err
	case KindBytes:
		b, err := readVarLen(d, o, "element", i, true)
		return append([]byte{}, b...), err
	case KindDecimal:
		if t.Precision <= maxCompactPrecision {
			return compactDecimal(int64(le.Uint64(d[o:])), t.Precision, t.Scale), nil
		}
		b, err := readVarLen(d, o, "element", i, false)
		if err != nil {
			return nil, err
		}
		return bigDecimal(b, t.Precision, t.Scale, field)
	case KindTimestamp, KindTimestampLTZ:
		if t.Precision <= 3 {
			return Timestamp{Millis: int64(le.Uint64(d[o:]))}, nil
		}
		return readTimestamp(d, o, field)
	case KindArray, KindMap, KindRow:
		b, err := readVarLen(d, o, "element", i, false)
		if err != nil {
			return nil, err
		}
		switch t.Kind {
		case KindArray:
			n, err := NewArray(b)
			if err != nil {
				return nil, err
			}
			return n.Values(*t.Elem)
		case KindMap:
			m, err := NewMap(b)
			if err != nil {
				return nil, err
			}
			return m.Entries(*t.Key, *t.Val)
		default:
			n, err := NewRow(len(t.Fields), b)
			if err != nil {
				return nil, err
			}
			return n.Values(t.Fields)
		}
	}
	return nil, fmt.Errorf("paimon: %s: unsupported type %v", field, t)
}

// Values reads every element with type t.
func (a Array) Values(t Type) ([]any, error) {
	if a.n > 0 {
		if _, err := a.elem(0, t.elemSize()); err != nil {
			return nil, err
		}
	}
	out := make([]any, a.n)
	for i := range out {
		v, err := a.Get(i, t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// Longs reads an ARRAY<BIGINT> such as SimpleStats' null counts; nil marks a null.
func (a Array) Longs() ([]*int64, error) {
	if a.n > 0 {
		if _, err := a.elem(0, 8); err != nil {
			return nil, err
		}
	}
	out := make([]*int64, a.n)
	vals := make([]int64, a.n)
	h := arrayHeader(a.n)
	for i := range out {
		if !a.IsNullAt(i) {
			vals[i] = int64(le.Uint64(a.data[h+8*i:]))
			out[i] = &vals[i]
		}
	}
	return out, nil
}

// Map is a Paimon BinaryMap: the byte size of the key array, the key BinaryArray, then
// the value BinaryArray.
type Map struct {
	keys, vals Array
	data       []byte
}

// NewMap wraps the bytes of a BinaryMap.
func NewMap(data []byte) (Map, error) {
	if len(data) < 4 {
		return Map{}, malformed("map", "%d bytes cannot hold the key array size", len(data))
	}
	kb := int64(int32(le.Uint32(data)))
	if kb < 0 || kb > int64(len(data)-4) {
		return Map{}, malformed("map", "key array size %d outside the map's %d bytes", kb, len(data))
	}
	keys, err := NewArray(data[4 : 4+kb])
	if err != nil {
		return Map{}, err
	}
	vals, err := NewArray(data[4+kb:])
	if err != nil {
		return Map{}, err
	}
	if keys.n != vals.n {
		return Map{}, malformed("map", "%d keys but %d values", keys.n, vals.n)
	}
	return Map{keys: keys, vals: vals, data: data}, nil
}

// Len is the number of entries.
func (m Map) Len() int { return m.keys.n }

// Keys is the key array.
func (m Map) Keys() Array { return m.keys }

// Values is the value array.
func (m Map) Values() Array { return m.vals }

// Entries reads the entries with the given key and value types.
func (m Map) Entries(kt, vt Type) ([]MapEntry, error) {
	ks, err := m.keys.Values(kt)
	if err != nil {
		return nil, fmt.Errorf("paimon: map keys: %w", err)
	}
	vs, err := m.vals.Values(vt)
	if err != nil {
		return nil, fmt.Errorf("paimon: map values: %w", err)
	}
	out := make([]MapEntry, len(ks))
	for i := range ks {
		out[i] = MapEntry{Key: ks[i], Value: vs[i]}
	}
	return out, nil
}
