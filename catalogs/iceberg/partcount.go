package iceberg

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/internal/arrowconv"
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

// split returns b, its rows reordered when needed, and how many of its
// rows from the start fit into the pass: all of them when their
// partitions, with those the pass holds, number at most max. Otherwise the
// rows are grouped (stable) so that those of the pass's partitions come
// first, then those of the new partitions in the order they first appear,
// and the fitting rows are those of the pass's partitions and of as many
// new ones as there is room for: the rest start the next pass, and a
// partition's rows of one batch land in one file of one pass. The first
// row of a fresh pass always fits. The caller releases the batch returned
// (b itself, retained, when it is not reordered).
func (c *partitionCounter) split(ctx context.Context, b arrow.RecordBatch) (arrow.RecordBatch, int64, error) {
	index := map[string]int32{} // key → index, in order of first appearance
	var keys []string
	ids := c.keyIDs(b, index, &keys)
	// rank orders the keys: those the pass holds first, then new ones.
	rank := make([]int32, len(keys))
	room := c.max - len(c.seen)
	next, fresh := int32(0), 0
	for id, k := range keys {
		if _, ok := c.seen[k]; ok {
			rank[id] = next
			next++
		}
	}
	held := next
	for id, k := range keys {
		if _, ok := c.seen[k]; !ok {
			rank[id] = next
			next++
			fresh++
		}
	}
	if fresh <= room {
		for _, k := range keys {
			c.seen[k] = struct{}{}
		}
		b.Retain()
		return b, b.NumRows(), nil
	}
	limit := held + int32(max(room, 0)) // ranks below it fit
	if len(c.seen) == 0 && limit == 0 {
		limit = 1
	}
	order, start := countingSort(ids, len(keys), func(id int32) int32 { return rank[id] })
	fit := int64(start[limit])
	for id, k := range keys {
		if rank[id] < limit {
			c.seen[k] = struct{}{}
		}
	}
	out, err := arrowconv.Take(ctx, b, order)
	if err != nil {
		return nil, 0, err
	}
	return out, fit, nil
}

// keyIDs returns, for each row of b, the index of its partition key in
// *keys, adding the keys not yet in index.
func (c *partitionCounter) keyIDs(b arrow.RecordBatch, index map[string]int32, keys *[]string) []int32 {
	cols := make([]arrow.Array, len(c.fields))
	for i, f := range c.fields {
		cols[i] = pathColumn(b, f.path)
	}
	ids := make([]int32, b.NumRows())
	for r := range ids {
		c.buf = c.buf[:0]
		for i, f := range c.fields {
			c.buf = appendKey(c.buf, cols[i], r, f.tr)
		}
		id, ok := index[string(c.buf)]
		if !ok {
			id = int32(len(*keys))
			*keys = append(*keys, string(c.buf))
			index[(*keys)[id]] = id
		}
		ids[r] = id
	}
	return ids
}

// cluster regroups the rows of buf (which it releases) by partition: one
// batch per partition, in the order the partitions first appear, each
// holding that partition's rows in their order, for iceberg-go's clustered
// writer, which keeps one file open at a time. It holds at most twice the
// rows of buf.
func (c *partitionCounter) cluster(ctx context.Context, buf []arrow.RecordBatch) (out []arrow.RecordBatch, err error) {
	index := map[string]int32{}
	var keys []string
	sorted := make([]arrow.RecordBatch, 0, len(buf))
	offsets := make([][]int, 0, len(buf))
	defer func() {
		for _, b := range buf {
			if b != nil {
				b.Release()
			}
		}
		for _, b := range sorted {
			b.Release()
		}
		if err != nil {
			for _, b := range out {
				b.Release()
			}
			out = nil
		}
	}()
	for j, b := range buf {
		ids := c.keyIDs(b, index, &keys)
		order, off := countingSort(ids, len(keys), func(id int32) int32 { return id })
		s, err := arrowconv.Take(ctx, b, order)
		if err != nil {
			return nil, err
		}
		b.Release()
		buf[j] = nil
		sorted, offsets = append(sorted, s), append(offsets, off)
	}
	for k := range keys {
		var pieces []arrow.RecordBatch
		for j, s := range sorted {
			off := offsets[j]
			if k+1 < len(off) && off[k+1] > off[k] {
				pieces = append(pieces, s.NewSlice(int64(off[k]), int64(off[k+1])))
			}
		}
		b, err := concat(pieces)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// countingSort orders the rows stably by rank(ids[row]), ranks in
// [0, n): it returns the row order and, per rank, where its rows start
// (off[rank]..off[rank+1]).
func countingSort(ids []int32, n int, rank func(int32) int32) ([]int32, []int) {
	off := make([]int, n+1)
	for _, id := range ids {
		off[rank(id)+1]++
	}
	for i := 1; i < len(off); i++ {
		off[i] += off[i-1]
	}
	next := slices.Clone(off)
	order := make([]int32, len(ids))
	for r, id := range ids {
		order[next[rank(id)]] = int32(r)
		next[rank(id)]++
	}
	return order, off
}

// concat joins batches of one schema into one, releasing them.
func concat(pieces []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(pieces) == 1 {
		return pieces[0], nil
	}
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	cols := make([]arrow.Array, pieces[0].NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, p := range pieces {
		rows += p.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(pieces))
		for j, p := range pieces {
			parts[j] = p.Column(i)
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return array.NewRecordBatch(pieces[0].Schema(), cols, rows), nil
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
