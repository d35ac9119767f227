package paimon

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Paimon lays BinaryRow, BinaryArray and BinaryMap out in the JVM's native byte order,
// which is little-endian on every platform Paimon ships for (BinaryRow.LITTLE_ENDIAN);
// only the framing around them (DataOutputView) is big-endian.
var le = binary.LittleEndian

// RowKind is the change kind Paimon keeps in a BinaryRow's header byte.
type RowKind byte

// Row kinds, as RowKind.toByteValue writes them.
const (
	RowKindInsert       RowKind = 0
	RowKindUpdateBefore RowKind = 1
	RowKindUpdateAfter  RowKind = 2
	RowKindDelete       RowKind = 3
)

// maxInline is BinarySection.MAX_FIX_PART_DATA_SIZE: strings and binaries of at most
// this many bytes live inside their 8-byte slot.
const maxInline = 7

// bitSetWidth is BinaryRow.calculateBitSetWidthInBytes: one header byte of row kind and
// one null bit a field, rounded up to whole 8-byte words.
func bitSetWidth(arity int) int { return ((arity + 63 + 8) / 64) * 8 }

// fixedPartSize is BinaryRow.calculateFixPartSizeInBytes.
func fixedPartSize(arity int) int { return bitSetWidth(arity) + 8*arity }

// Row is a Paimon BinaryRow: a header byte with the row kind, the null bits, one 8-byte
// slot a field (values of 7 bytes or less inline, others as offset and size of a
// variable part padded to 8 bytes). Data holds exactly the row's bytes; the accessors
// check every offset against it.
type Row struct {
	arity int
	data  []byte
}

// EmptyRow is BinaryRow.EMPTY_ROW, the partition of an unpartitioned table.
var EmptyRow = Row{arity: 0, data: make([]byte, 8)}

// NewRow wraps the bytes of a BinaryRow of the given arity, checking that the fixed
// part fits.
func NewRow(arity int, data []byte) (Row, error) {
	if arity < 0 {
		return Row{}, malformed("row", "negative arity %d", arity)
	}
	if int64(arity) > int64(len(data)) {
		return Row{}, malformed("row", "arity %d cannot fit in %d bytes", arity, len(data))
	}
	if fixedPartSize(arity) > len(data) {
		return Row{}, malformed("row", "arity %d needs a fixed part of %d bytes, row has %d", arity, fixedPartSize(arity), len(data))
	}
	return Row{arity: arity, data: data}, nil
}

// Arity is the number of fields.
func (r Row) Arity() int { return r.arity }

// Bytes returns the row's bytes (not a copy).
func (r Row) Bytes() []byte { return r.data }

// Kind returns the row kind from the header byte.
func (r Row) Kind() (RowKind, error) {
	if len(r.data) == 0 {
		return 0, malformed("row", "empty row has no header")
	}
	k := RowKind(r.data[0])
	if k > RowKindDelete {
		return 0, malformed("row kind", "unknown row kind %d", k)
	}
	return k, nil
}

// Equal reports whether two rows have the same arity and bytes, as BinaryRow.equals.
func (r Row) Equal(o Row) bool {
	return r.arity == o.arity && string(r.data) == string(o.data)
}

func (r Row) check(pos int) error {
	if pos < 0 || pos >= r.arity {
		return fmt.Errorf("paimon: field %d of a row of arity %d: %w", pos, r.arity, ErrMalformed)
	}
	return nil
}

func (r Row) slot(pos int) int { return bitSetWidth(r.arity) + 8*pos }

// IsNullAt reports whether field pos is null (false for a field out of range).
func (r Row) IsNullAt(pos int) bool {
	if pos < 0 || pos >= r.arity {
		return false
	}
	bit := pos + 8
	return r.data[bit>>3]&(1<<(bit&7)) != 0
}

func (r Row) fixed(pos int) (int, error) {
	if err := r.check(pos); err != nil {
		return 0, err
	}
	return r.slot(pos), nil
}

// Boolean reads a BOOLEAN field.
func (r Row) Boolean(pos int) (bool, error) {
	o, err := r.fixed(pos)
	return err == nil && r.data[o] != 0, err
}

// TinyInt reads a TINYINT field.
func (r Row) TinyInt(pos int) (int8, error) {
	o, err := r.fixed(pos)
	if err != nil {
		return 0, err
	}
	return int8(r.data[o]), nil
}

// SmallInt reads a SMALLINT field.
func (r Row) SmallInt(pos int) (int16, error) {
	o, err := r.fixed(pos)
	if err != nil {
		return 0, err
	}
	return int16(le.Uint16(r.data[o:])), nil
}

// Int reads an INT, DATE or TIME field.
func (r Row) Int(pos int) (int32, error) {
	o, err := r.fixed(pos)
	if err != nil {
		return 0, err
	}
	return int32(le.Uint32(r.data[o:])), nil
}

// BigInt reads a BIGINT field.
func (r Row) BigInt(pos int) (int64, error) {
	o, err := r.fixed(pos)
	if err != nil {
		return 0, err
	}
	return int64(le.Uint64(r.data[o:])), nil
}

// Float reads a FLOAT field.
func (r Row) Float(pos int) (float32, error) {
	v, err := r.Int(pos)
	return math.Float32frombits(uint32(v)), err
}

// Double reads a DOUBLE field.
func (r Row) Double(pos int) (float64, error) {
	v, err := r.BigInt(pos)
	return math.Float64frombits(uint64(v)), err
}

// Binary reads a BINARY, VARBINARY, CHAR or VARCHAR field's bytes (not a copy).
func (r Row) Binary(pos int) ([]byte, error) {
	o, err := r.fixed(pos)
	if err != nil {
		return nil, err
	}
	return readVarLen(r.data, o, "field", pos, true)
}

// String reads a CHAR or VARCHAR field.
func (r Row) String(pos int) (string, error) {
	b, err := r.Binary(pos)
	return string(b), err
}

// section reads the offset and size in slot pos and returns the bytes they point at;
// nested rows, arrays, maps, big decimals and precise timestamps live there.
func (r Row) section(pos int) ([]byte, error) {
	o, err := r.fixed(pos)
	if err != nil {
		return nil, err
	}
	return readVarLen(r.data, o, "field", pos, false)
}

// readVarLen decodes an 8-byte slot at off in base holding either inline bytes (mark bit
// set, length in the top byte) or the offset (high 32 bits) and size (low 32 bits) of a
// part of base. inlineOK is false for kinds Java never inlines (rows, arrays, maps).
func readVarLen(base []byte, off int, what string, idx int, inlineOK bool) ([]byte, error) {
	v := le.Uint64(base[off:])
	field := func() string { return fmt.Sprintf("%s %d", what, idx) }
	if v&(1<<63) != 0 {
		if !inlineOK {
			return nil, malformed(field(), "inline mark on a field that is never inlined")
		}
		n := int((v >> 56) & 0x7f)
		if n > maxInline {
			return nil, malformed(field(), "inline length %d exceeds %d", n, maxInline)
		}
		return base[off : off+n : off+n], nil
	}
	start, size := int64(v>>32), int64(uint32(v))
	if start+size > int64(len(base)) {
		return nil, malformed(field(), "offset %d and size %d outside the %d bytes of its row", start, size, len(base))
	}
	return base[start : start+size : start+size], nil
}

// Row reads a nested ROW field of the given arity.
func (r Row) Row(pos, arity int) (Row, error) {
	b, err := r.section(pos)
	if err != nil {
		return Row{}, err
	}
	return NewRow(arity, b)
}

// Array reads an ARRAY field.
func (r Row) Array(pos int) (Array, error) {
	b, err := r.section(pos)
	if err != nil {
		return Array{}, err
	}
	return NewArray(b)
}

// Map reads a MAP field.
func (r Row) Map(pos int) (Map, error) {
	b, err := r.section(pos)
	if err != nil {
		return Map{}, err
	}
	return NewMap(b)
}

// Decimal reads a DECIMAL(precision, scale) field: an unscaled long in the slot up to
// precision 18, otherwise big-endian two's-complement bytes in the variable part.
func (r Row) Decimal(pos, precision, scale int) (Decimal, error) {
	if precision <= maxCompactPrecision {
		v, err := r.BigInt(pos)
		return compactDecimal(v, precision, scale), err
	}
	b, err := r.section(pos)
	if err != nil {
		return Decimal{}, err
	}
	return bigDecimal(b, precision, scale, fmt.Sprintf("field %d", pos))
}

// Timestamp reads a TIMESTAMP(precision) or TIMESTAMP_LTZ(precision) field: epoch millis
// in the slot up to precision 3, otherwise millis in the variable part and the
// nanoseconds of the millisecond in the slot's low 32 bits.
func (r Row) Timestamp(pos, precision int) (Timestamp, error) {
	if precision <= 3 {
		v, err := r.BigInt(pos)
		return Timestamp{Millis: v}, err
	}
	o, err := r.fixed(pos)
	if err != nil {
		return Timestamp{}, err
	}
	return readTimestamp(r.data, o, fmt.Sprintf("field %d", pos))
}

func readTimestamp(base []byte, off int, field string) (Timestamp, error) {
	v := le.Uint64(base[off:])
	start := int64(v >> 32)
	nanos := int32(uint32(v))
	if start+8 > int64(len(base)) {
		return Timestamp{}, malformed(field, "timestamp offset %d outside the %d bytes of its row", start, len(base))
	}
	if nanos < 0 || nanos > 999_999 {
		return Timestamp{}, malformed(field, "nanos of millisecond %d out of range", nanos)
	}
	return Timestamp{Millis: int64(le.Uint64(base[start:])), NanoOfMillis: nanos}, nil
}

// Array is a Paimon BinaryArray: an element count, null bits in 4-byte words, the
// elements at their fixed width (see elemSize), then a variable part.
type Array struct {
	n    int
	data []byte
}

func arrayHeader(n int) int { return 4 + ((n+31)/32)*4 }

// NewArray wraps the bytes of a BinaryArray.
func NewArray(data []byte) (Array, error) {
	if len(data) < 4 {
		return Array{}, malformed("array", "%d bytes cannot hold the element count", len(data))
	}
	n := int32(le.Uint32(data))
	if n < 0 {
		return Array{}, malformed("array", "negative element count %d", n)
	}
	if int64(arrayHeader(int(n))) > int64(len(data)) {
		return Array{}, malformed("array", "%d elements need a header of %d bytes, array has %d", n, arrayHeader(int(n)), len(data))
	}
	return Array{n: int(n), data: data}, nil
}

// Len is the number of elements.
func (a Array) Len() int { return a.n }

// Bytes returns the array's bytes (not a copy).
func (a Array) Bytes() []byte { return a.data }

// IsNullAt reports whether element i is null.
func (a Array) IsNullAt(i int) bool {
	if i < 0 || i >= a.n {
		return false
	}
	return a.data[4+(i>>3)]&(1<<(i&7)) != 0
}

// elem returns the offset of element i of the given width, checking the element region.
func (a Array) elem(i, size int) (int, error) {
	if i < 0 || i >= a.n {
		return 0, fmt.Errorf("paimon: element %d of an array of %d: %w", i, a.n, ErrMalformed)
	}
	h := arrayHeader(a.n)
	if int64(h)+int64(a.n)*int64(size) > int64(len(a.data)) {
		return 0, malformed("array", "%d elements of %d bytes do not fit in %d bytes", a.n, size, len(a.data))
	}
	return h + i*size, nil
}
