package iceberg

import (
	"encoding/binary"
	"math"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// Bounded open files for partitioned tables. iceberg-go's partitioned
// writer (WriteRecords) keeps a Parquet writer open for every partition an
// upload has touched until the upload ends, each with its page buffers and
// dictionaries: 5,000 partitions of 200 rows each held 430 MB of heap. An
// upload whose rows spread over more partitions than the catalog's
// write.max-open-files is therefore written in passes: partitionCounter
// counts the distinct partitions of the rows sent to the current pass, and
// the row that would open one more ends it (its files are closed and
// reported) and starts the next. Memory is bounded by max-open-files open
// writers; the price is that a partition an upload returns to after its
// pass gets another, smaller file.

// DefaultMaxOpenFiles bounds the data files one partitioned upload keeps
// open at once (PropMaxOpenFiles).
const DefaultMaxOpenFiles = 32

// partitionCounter counts the distinct partition keys of the rows of one
// pass, up to max. A key is exact for the transforms that matter for the
// count (identity, bucket, truncate, year/month/day/hour); where it is not
// (a type it does not know), it is the source value itself, which has at
// least as many distinct values as the partition: the count never
// understates the files open.
type partitionCounter struct {
	fields []countField
	seen   map[string]struct{}
	max    int
	buf    []byte
}

type countField struct {
	path []string // names from the top-level column down struct fields
	tr   ice.Transform
}

// newPartitionCounter returns the counter of spec's partitions over
// schema, or nil when no count is needed: the spec cannot produce more
// than max partitions (void and bucket fields only, whose bucket counts
// multiply to at most max).
func newPartitionCounter(spec ice.PartitionSpec, sc *ice.Schema, limit int) *partitionCounter {
	c := &partitionCounter{seen: map[string]struct{}{}, max: limit}
	bound := 1
	for _, f := range spec.Fields() {
		switch t := f.Transform.(type) {
		case ice.VoidTransform:
			continue
		case ice.BucketTransform:
			bound = min(bound*max(t.NumBuckets, 1), math.MaxInt32)
		default:
			bound = math.MaxInt32
		}
		c.fields = append(c.fields, countField{path: fieldPath(sc, f.SourceID()), tr: f.Transform})
	}
	if bound <= limit {
		return nil
	}
	return c
}

// fieldPath is the names from a top-level column to the field with the
// given id, through structs (a partition source is never inside a list or
// map), or nil.
func fieldPath(sc *ice.Schema, id int) []string {
	var walk func(fields []ice.NestedField) []string
	walk = func(fields []ice.NestedField) []string {
		for _, f := range fields {
			if f.ID == id {
				return []string{f.Name}
			}
			if st, ok := f.Type.(*ice.StructType); ok {
				if p := walk(st.FieldList); p != nil {
					return append([]string{f.Name}, p...)
				}
			}
		}
		return nil
	}
	return walk(sc.Fields())
}

// reset starts a new pass.
func (c *partitionCounter) reset() { clear(c.seen) }

// fits adds the keys of b's rows in order and returns the number of rows
// from the start that fit into the pass: b.NumRows() when all do, else the
// index of the first row whose partition would be one more than max. The
// first row of a fresh pass always fits.
func (c *partitionCounter) fits(b arrow.RecordBatch) int64 {
	cols := make([]arrow.Array, len(c.fields))
	for i, f := range c.fields {
		cols[i] = pathColumn(b, f.path)
	}
	for r := range int(b.NumRows()) {
		c.buf = c.buf[:0]
		for i, f := range c.fields {
			c.buf = appendKey(c.buf, cols[i], r, f.tr)
		}
		if _, ok := c.seen[string(c.buf)]; ok {
			continue
		}
		if len(c.seen) >= c.max {
			return int64(r)
		}
		c.seen[string(c.buf)] = struct{}{}
	}
	return b.NumRows()
}

// pathColumn finds the array at path in b, or nil.
func pathColumn(b arrow.RecordBatch, path []string) arrow.Array {
	if len(path) == 0 {
		return nil
	}
	idx := b.Schema().FieldIndices(path[0])
	if len(idx) != 1 {
		return nil
	}
	a := b.Column(idx[0])
	for _, name := range path[1:] {
		st, ok := a.(*array.Struct)
		if !ok {
			return nil
		}
		i, ok := st.DataType().(*arrow.StructType).FieldIdx(name)
		if !ok {
			return nil
		}
		a = st.Field(i)
	}
	return a
}

// nullAt reports whether row r of a is null, a struct parent's null
// included (a child of a null struct slot may hold anything).
func nullAt(a arrow.Array, r int) bool { return a == nil || a.IsNull(r) }

// appendKey appends the key of row r of a under transform tr: a tag byte
// and the value's bytes.
func appendKey(buf []byte, a arrow.Array, r int, tr ice.Transform) []byte {
	if nullAt(a, r) {
		return append(buf, 0)
	}
	switch t := tr.(type) {
	case ice.BucketTransform:
		if lit, ok := literalAt(a, r); ok {
			if out := t.Apply(ice.Optional[ice.Literal]{Valid: true, Val: lit}); out.Valid {
				if v, ok := out.Val.(ice.Int32Literal); ok {
					return binary.LittleEndian.AppendUint32(append(buf, 1), uint32(v))
				}
			}
		}
	case ice.TruncateTransform:
		w := int64(max(t.Width, 1))
		switch v := a.(type) {
		case *array.Int32:
			return binary.LittleEndian.AppendUint64(append(buf, 1), uint64(floorTo(int64(v.Value(r)), w)))
		case *array.Int64:
			return binary.LittleEndian.AppendUint64(append(buf, 1), uint64(floorTo(v.Value(r), w)))
		case *array.String:
			s := v.Value(r)
			n, cut := 0, len(s)
			for i := range s {
				if n == int(w) {
					cut = i
					break
				}
				n++
			}
			if !utf8.ValidString(s) {
				cut = len(s) // not a truncation iceberg-go would make: count the value itself
			}
			return appendString(append(buf, 1), s[:cut])
		case *array.Binary:
			bs := v.Value(r)
			return appendBytes(append(buf, 1), bs[:min(len(bs), int(w))])
		}
	case ice.YearTransform, ice.MonthTransform, ice.DayTransform, ice.HourTransform:
		if v, ok := timeKey(a, r, tr); ok {
			return binary.LittleEndian.AppendUint64(append(buf, 1), uint64(v))
		}
	}
	return appendRaw(append(buf, 2), a, r)
}

// floorTo rounds v down to a multiple of w, as Iceberg's truncate does
// (v - ((v % w) + w) % w).
func floorTo(v, w int64) int64 { return v - ((v%w)+w)%w }

func floorDiv(v, d int64) int64 {
	q := v / d
	if v%d != 0 && (v < 0) != (d < 0) {
		q--
	}
	return q
}

// timeKey is the value of a year, month, day or hour transform of row r:
// units since 1970 in UTC.
func timeKey(a arrow.Array, r int, tr ice.Transform) (int64, bool) {
	var micros int64
	switch v := a.(type) {
	case *array.Timestamp:
		micros = int64(v.Value(r))
		switch v.DataType().(*arrow.TimestampType).Unit {
		case arrow.Nanosecond:
			micros = floorDiv(micros, 1000)
		case arrow.Millisecond:
			micros *= 1000
		case arrow.Second:
			micros *= 1_000_000
		}
	case *array.Date32:
		micros = int64(v.Value(r)) * 86_400_000_000
	default:
		return 0, false
	}
	switch tr.(type) {
	case ice.HourTransform:
		return floorDiv(micros, 3_600_000_000), true
	case ice.DayTransform:
		return floorDiv(micros, 86_400_000_000), true
	}
	t := time.UnixMicro(micros).UTC()
	months := int64(t.Year()-1970)*12 + int64(t.Month()) - 1
	if _, ok := tr.(ice.YearTransform); ok {
		return int64(t.Year() - 1970), true
	}
	return months, true
}

// literalAt is row r of a as the Iceberg literal bucket hashes, for the
// types a table stores.
func literalAt(a arrow.Array, r int) (ice.Literal, bool) {
	switch v := a.(type) {
	case *array.Int32:
		return ice.Int32Literal(v.Value(r)), true
	case *array.Int64:
		return ice.Int64Literal(v.Value(r)), true
	case *array.Date32:
		return ice.DateLiteral(v.Value(r)), true
	case *array.Time64:
		return ice.TimeLiteral(v.Value(r)), true
	case *array.Timestamp:
		if v.DataType().(*arrow.TimestampType).Unit == arrow.Nanosecond {
			return ice.TimestampNsLiteral(v.Value(r)), true
		}
		return ice.TimestampLiteral(v.Value(r)), true
	case *array.String:
		return ice.StringLiteral(v.Value(r)), true
	case *array.Binary:
		return ice.BinaryLiteral(v.Value(r)), true
	case *array.FixedSizeBinary:
		b := v.Value(r)
		if len(b) == 16 && a.DataType().ID() == arrow.EXTENSION {
			return ice.UUIDLiteral(uuid.UUID(b)), true
		}
		return ice.FixedLiteral(b), true
	}
	return nil, false
}

// appendRaw appends row r's value itself (identity, and the fallback of
// the other transforms).
func appendRaw(buf []byte, a arrow.Array, r int) []byte {
	switch v := a.(type) {
	case *array.Int32:
		return binary.LittleEndian.AppendUint32(buf, uint32(v.Value(r)))
	case *array.Int64:
		return binary.LittleEndian.AppendUint64(buf, uint64(v.Value(r)))
	case *array.Date32:
		return binary.LittleEndian.AppendUint32(buf, uint32(v.Value(r)))
	case *array.Timestamp:
		return binary.LittleEndian.AppendUint64(buf, uint64(v.Value(r)))
	case *array.Boolean:
		if v.Value(r) {
			return append(buf, 1)
		}
		return append(buf, 0)
	case *array.String:
		return appendString(buf, v.Value(r))
	case *array.Binary:
		return appendBytes(buf, v.Value(r))
	case *array.FixedSizeBinary:
		return appendBytes(buf, v.Value(r))
	}
	return appendString(buf, a.ValueStr(r))
}

func appendBytes(buf, b []byte) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(b))), b...)
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}
