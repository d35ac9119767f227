package paimon

import (
	"fmt"
	"math"
	"slices"
)

// sectionWriter builds one BinaryRow or BinaryArray the way Java's BinaryRowWriter and
// BinaryArrayWriter do, so that equal values give equal bytes: unused bytes are zero,
// the variable part is padded to 8 bytes, strings and binaries of 7 bytes or less are
// inlined, and null non-compact decimals and timestamps of a row still reserve their
// variable-part space (RowHelper's writeNulls).
type sectionWriter struct {
	buf      []byte
	row      bool
	slotBase int
}

func roundUp8(n int) int { return (n + 7) &^ 7 }

func (w *sectionWriter) grow(n int) {
	l := len(w.buf)
	w.buf = slices.Grow(w.buf, n)[:l+n]
	clear(w.buf[l:])
}

func (w *sectionWriter) resetRow(arity int, kind RowKind) {
	w.row = true
	w.slotBase = bitSetWidth(arity)
	w.buf = w.buf[:0]
	w.grow(fixedPartSize(arity))
	w.buf[0] = byte(kind)
}

func (w *sectionWriter) resetArray(n, elemSize int) {
	w.row = false
	w.slotBase = arrayHeader(n)
	w.buf = w.buf[:0]
	w.grow(roundUp8(w.slotBase + n*elemSize))
	le.PutUint32(w.buf, uint32(n))
}

func (w *sectionWriter) off(pos, size int) int {
	if w.row {
		return w.slotBase + 8*pos
	}
	return w.slotBase + size*pos
}

func (w *sectionWriter) setNullBit(pos int) {
	if w.row {
		pos += 8
		w.buf[pos>>3] |= 1 << (pos & 7)
		return
	}
	w.buf[4+(pos>>3)] |= 1 << (pos & 7)
}

// setNull marks pos null and zeroes its slot (a row's 8 bytes, or an element's width).
func (w *sectionWriter) setNull(pos, size int) {
	w.setNullBit(pos)
	if w.row {
		size = 8
	}
	o := w.off(pos, size)
	clear(w.buf[o : o+size])
}

func (w *sectionWriter) putByte(pos int, v byte)    { w.buf[w.off(pos, 1)] = v }
func (w *sectionWriter) putShort(pos int, v uint16) { le.PutUint16(w.buf[w.off(pos, 2):], v) }
func (w *sectionWriter) putInt(pos int, v uint32)   { le.PutUint32(w.buf[w.off(pos, 4):], v) }
func (w *sectionWriter) putLong(pos int, v uint64)  { le.PutUint64(w.buf[w.off(pos, 8):], v) }

// reserve appends n zero bytes, rounded up to a word, and returns where they start.
func (w *sectionWriter) reserve(n int) int {
	c := len(w.buf)
	w.grow(roundUp8(n))
	return c
}

// writeBytes writes a string or binary: inline when short, else in the variable part.
func (w *sectionWriter) writeBytes(pos int, b []byte) {
	if len(b) <= maxInline {
		var v uint64
		for i, c := range b {
			v |= uint64(c) << (8 * i)
		}
		w.putLong(pos, v|uint64(0x80|len(b))<<56)
		return
	}
	w.writeSection(pos, b)
}

// writeString is writeBytes for a string, without converting it to a slice first.
func (w *sectionWriter) writeString(pos int, s string) {
	if len(s) <= maxInline {
		var v uint64
		for i := 0; i < len(s); i++ {
			v |= uint64(s[i]) << (8 * i)
		}
		w.putLong(pos, v|uint64(0x80|len(s))<<56)
		return
	}
	c := len(w.buf)
	w.buf = append(w.buf, s...)
	if pad := roundUp8(len(s)) - len(s); pad > 0 {
		w.grow(pad)
	}
	w.putLong(pos, uint64(c)<<32|uint64(uint32(len(s))))
}

// writeSection copies b into the variable part and points slot pos at it.
func (w *sectionWriter) writeSection(pos int, b []byte) {
	c := len(w.buf)
	w.buf = append(w.buf, b...)
	if pad := roundUp8(len(b)) - len(b); pad > 0 {
		w.grow(pad)
	}
	w.putLong(pos, uint64(c)<<32|uint64(uint32(len(b))))
}

func (w *sectionWriter) writeDecimal(pos int, d *Decimal, precision int) error {
	if precision <= maxCompactPrecision {
		if d == nil {
			w.setNull(pos, 8)
			return nil
		}
		if !d.Unscaled.IsInt64() {
			return fmt.Errorf("paimon: decimal %s does not fit precision %d", d, precision)
		}
		w.putLong(pos, uint64(d.Unscaled.Int64()))
		return nil
	}
	c := w.reserve(16)
	if d == nil {
		w.setNullBit(pos)
		w.putLong(pos, uint64(c)<<32)
		return nil
	}
	b := d.unscaledBytes()
	if len(b) > 16 {
		return fmt.Errorf("paimon: decimal %s needs %d bytes, more than 16", d, len(b))
	}
	copy(w.buf[c:], b)
	w.putLong(pos, uint64(c)<<32|uint64(len(b)))
	return nil
}

func (w *sectionWriter) writeTimestamp(pos int, ts *Timestamp, precision int) {
	if precision <= 3 {
		if ts == nil {
			w.setNull(pos, 8)
			return
		}
		w.putLong(pos, uint64(ts.Millis))
		return
	}
	c := w.reserve(8)
	if ts == nil {
		w.setNullBit(pos)
		w.putLong(pos, uint64(c)<<32)
		return
	}
	le.PutUint64(w.buf[c:], uint64(ts.Millis))
	w.putLong(pos, uint64(c)<<32|uint64(uint32(ts.NanoOfMillis)))
}

// BuildRow builds an INSERT BinaryRow from Go values (see Row.Get for the value types;
// plain ints are accepted for integer kinds, and nil is null), as Paimon's
// InternalRowSerializer would from a GenericRow.
func BuildRow(types []Type, values []any) (Row, error) {
	if len(types) != len(values) {
		return Row{}, fmt.Errorf("paimon: %d types for %d values", len(types), len(values))
	}
	var w sectionWriter
	w.resetRow(len(types), RowKindInsert)
	for i, t := range types {
		if err := w.writeValue(i, t, values[i]); err != nil {
			return Row{}, fmt.Errorf("paimon: field %d (%v): %w", i, t, err)
		}
	}
	return Row{arity: len(types), data: w.buf}, nil
}

// BuildArray builds a BinaryArray of element type t, as InternalArraySerializer would.
func BuildArray(t Type, values []any) (Array, error) {
	var w sectionWriter
	w.resetArray(len(values), t.elemSize())
	for i, v := range values {
		if err := w.writeValue(i, t, v); err != nil {
			return Array{}, fmt.Errorf("paimon: element %d (%v): %w", i, t, err)
		}
	}
	return Array{n: len(values), data: w.buf}, nil
}

// BuildMap builds a BinaryMap from entries, as InternalMapSerializer would.
func BuildMap(kt, vt Type, entries []MapEntry) (Map, error) {
	ks, vs := make([]any, len(entries)), make([]any, len(entries))
	for i, e := range entries {
		ks[i], vs[i] = e.Key, e.Value
	}
	ka, err := BuildArray(kt, ks)
	if err != nil {
		return Map{}, fmt.Errorf("paimon: map keys: %w", err)
	}
	va, err := BuildArray(vt, vs)
	if err != nil {
		return Map{}, fmt.Errorf("paimon: map values: %w", err)
	}
	data := make([]byte, 4, 4+len(ka.data)+len(va.data))
	le.PutUint32(data, uint32(len(ka.data)))
	data = append(append(data, ka.data...), va.data...)
	return NewMap(data)
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

func (w *sectionWriter) writeValue(pos int, t Type, v any) error {
	if v == nil {
		switch {
		case t.Kind == KindDecimal && w.row:
			return w.writeDecimal(pos, nil, t.Precision)
		case (t.Kind == KindTimestamp || t.Kind == KindTimestampLTZ) && w.row:
			w.writeTimestamp(pos, nil, t.Precision)
		default:
			w.setNull(pos, t.elemSize())
		}
		return nil
	}
	bad := func() error { return fmt.Errorf("value %v of Go type %T does not fit %v", v, v, t) }
	switch t.Kind {
	case KindBoolean:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		if b {
			w.putByte(pos, 1)
		}
	case KindTinyInt, KindSmallInt, KindInt, KindDate, KindTime, KindBigInt:
		n, ok := asInt(v)
		if !ok {
			return bad()
		}
		switch t.Kind {
		case KindTinyInt:
			if n != int64(int8(n)) {
				return bad()
			}
			w.putByte(pos, byte(n))
		case KindSmallInt:
			if n != int64(int16(n)) {
				return bad()
			}
			w.putShort(pos, uint16(n))
		case KindBigInt:
			w.putLong(pos, uint64(n))
		default:
			if n != int64(int32(n)) {
				return bad()
			}
			w.putInt(pos, uint32(n))
		}
	case KindFloat:
		f, ok := v.(float32)
		if !ok {
			return bad()
		}
		w.putInt(pos, math.Float32bits(f))
	case KindDouble:
		f, ok := v.(float64)
		if !ok {
			return bad()
		}
		w.putLong(pos, math.Float64bits(f))
	case KindString:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		w.writeString(pos, s)
	case KindBytes:
		b, ok := v.([]byte)
		if !ok {
			return bad()
		}
		w.writeBytes(pos, b)
	case KindDecimal:
		d, ok := v.(Decimal)
		if !ok || d.Unscaled == nil {
			return bad()
		}
		return w.writeDecimal(pos, &d, t.Precision)
	case KindTimestamp, KindTimestampLTZ:
		ts, ok := v.(Timestamp)
		if !ok {
			return bad()
		}
		if ts.NanoOfMillis < 0 || ts.NanoOfMillis > 999_999 {
			return fmt.Errorf("nanos of millisecond %d out of range", ts.NanoOfMillis)
		}
		w.writeTimestamp(pos, &ts, t.Precision)
	case KindArray:
		vs, ok := v.([]any)
		if !ok {
			return bad()
		}
		a, err := BuildArray(*t.Elem, vs)
		if err != nil {
			return err
		}
		w.writeSection(pos, a.data)
	case KindMap:
		es, ok := v.([]MapEntry)
		if !ok {
			return bad()
		}
		m, err := BuildMap(*t.Key, *t.Val, es)
		if err != nil {
			return err
		}
		w.writeSection(pos, m.data)
	case KindRow:
		vs, ok := v.([]any)
		if !ok {
			return bad()
		}
		r, err := BuildRow(t.Fields, vs)
		if err != nil {
			return err
		}
		w.writeSection(pos, r.data)
	default:
		return fmt.Errorf("unsupported type %v", t)
	}
	return nil
}
