package paimon

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
	"github.com/flightgw/flightgw/internal/arrowconv"
	"github.com/flightgw/flightgw/internal/pqwrite"
)

// Field ids and names of a primary-key table's system columns
// (SpecialFields): _KEY_<k> carries key field k at KEY_FIELD_ID_START + id.
const (
	keyFieldPrefix  = "_KEY_"
	keyFieldIDStart = math.MaxInt32 / 2
	seqField        = "_SEQUENCE_NUMBER"
	seqFieldID      = math.MaxInt32 - 1
	kindField       = "_VALUE_KIND"
	kindFieldID     = math.MaxInt32 - 2
)

// optWriteBufferSize is Paimon's table option for the memory a writer
// buffers before it writes a sorted file: here it lowers the catalog's
// write.buffer-size-bytes for one table.
const optWriteBufferSize = "write-buffer-size"

// pkBuffer holds rows of one partition and bucket of a primary-key table
// until they are written: a level-0 file is sorted by key with one row per
// key, which needs every row of the file at hand. The rows of every
// bucket together are bounded by the stream's bufLimit: a batch that
// would pass it first spills the largest buffers as level-0 files (their
// sequence numbers below every later row's of the bucket), so one stream
// may write several overlapping level-0 files to a bucket, as Paimon's
// own writers do, and readers merge them by key and sequence number.
type pkBuffer struct {
	g       *group
	batches []arrow.RecordBatch
	bytes   int64 // Arrow size of batches
}

func (b *pkBuffer) release() {
	for _, r := range b.batches {
		r.Release()
	}
	b.batches, b.bytes = nil, 0
}

func (s *stream) bufferPK(ctx context.Context, g *group, rec arrow.RecordBatch) error {
	n := pqwrite.BatchBytes(rec)
	for s.buffered+n > s.bufLimit && s.buffered > 0 {
		if err := s.spill(ctx, s.largestPK()); err != nil {
			return err
		}
	}
	b, ok := s.pk[g.key]
	if !ok {
		b = &pkBuffer{g: g}
		s.pk[g.key] = b
	}
	rec.Retain()
	b.batches = append(b.batches, rec)
	b.bytes += n
	s.buffered += n
	if s.buffered > s.bufLimit {
		// One batch alone passes the bound: write it now rather than hold it.
		return s.spill(ctx, g.key)
	}
	s.peak = max(s.peak, s.buffered)
	return nil
}

// largestPK is the key of the buffer holding the most bytes.
func (s *stream) largestPK() string {
	var best string
	for _, k := range sortedKeys(s.pk) {
		if best == "" || s.pk[k].bytes > s.pk[best].bytes {
			best = k
		}
	}
	return best
}

// spill writes one buffer before Close.
func (s *stream) spill(ctx context.Context, key string) error {
	s.spills++
	return s.flushBuffer(ctx, key)
}

// flushBuffer writes a buffer's rows as level-0 files and drops it.
func (s *stream) flushBuffer(ctx context.Context, key string) error {
	b := s.pk[key]
	delete(s.pk, key)
	s.buffered -= b.bytes
	return s.writePKFiles(ctx, b)
}

// flushPK writes the buffered rows of every partition and bucket.
func (s *stream) flushPK(ctx context.Context) error {
	for _, k := range sortedKeys(s.pk) {
		if err := s.flushBuffer(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// pkChunk is the number of sorted rows gathered and encoded at once.
const pkChunk = 64 << 10

// writePKFiles writes a buffer's rows as a sorted run of level-0 files:
// rows sorted by the trimmed primary key, the last row of each key kept (a
// later write of a key within one stream wins, as it would across
// commits), sequence numbers continuing the bucket's. Rows are gathered
// and encoded pkChunk at a time, and a file rolls at the target file size
// (the next continues the key order), so that a spill holds the buffer
// (concatenated once) and one chunk.
func (s *stream) writePKFiles(ctx context.Context, b *pkBuffer) error {
	rec, err := concat(s.target, b.batches)
	b.release()
	if err != nil {
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: buffer rows", s.st.ident))
	}
	defer rec.Release()
	keys := s.lay.trimmedPrimary()
	keyCols := make([]arrow.Array, len(keys))
	for j, c := range keys {
		keyCols[j] = rec.Column(c)
	}
	cmpRows := rowComparator(keyCols)
	idx := make([]int, rec.NumRows())
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, cmpRows)
	kept := idx[:0]
	for i, r := range idx {
		if i+1 < len(idx) && cmpRows(r, idx[i+1]) == 0 {
			continue // a later row of the same key follows
		}
		kept = append(kept, r)
	}
	seq, err := s.seqFor(ctx, b.g)
	if err != nil {
		return err
	}
	seq = s.p.seqs.reserve(s.st.dir+"\x00"+b.g.key, seq, int64(len(kept)))
	var w *fileWriter
	defer func() {
		if w != nil {
			w.pf.Abort()
		}
	}()
	for off := 0; off < len(kept); off += pkChunk {
		part := kept[off:min(off+pkChunk, len(kept))]
		sorted, err := arrowconv.Take(ctx, rec, part)
		if err != nil {
			return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: sort rows", s.st.ident))
		}
		first := seq
		err = s.writePKChunk(ctx, &w, b.g, sorted, keys, func(i int) int64 { return first + int64(i) })
		seq += sorted.NumRows()
		sorted.Release()
		if err != nil {
			return err
		}
		if w.size() >= s.p.cfg.targetFileSize {
			f := w
			w = nil
			if err := s.finish(f); err != nil {
				return err
			}
		}
	}
	s.nextSeq[b.g.key] = seq
	if w == nil {
		return nil
	}
	f := w
	w = nil
	return s.finish(f)
}

// writePKChunk appends sorted rows (row i's sequence number seqAt(i)) to
// *w, opening it first when nil.
func (s *stream) writePKChunk(ctx context.Context, w **fileWriter, g *group, sorted arrow.RecordBatch, keys []int, seqAt func(int) int64) error {
	file, err := s.keyValueBatch(sorted, keys, seqAt)
	if err != nil {
		return err
	}
	defer file.Release()
	f := *w
	if f == nil {
		if f, err = s.newFile(ctx, g, file, s.mem); err != nil {
			return err
		}
		*w = f
		f.seq = seqAt(0)
		f.minSeq, f.maxSeq = f.seq, f.seq
		f.keyStats = make([]colStats, len(keys))
		for j, c := range keys {
			f.keyStats[j] = newColStats(s.st.schema.cols[c].arrow)
		}
		if f.minKey, err = s.keyRow(sorted, keys, 0); err != nil {
			return err
		}
	}
	for j, c := range keys {
		f.keyStats[j].add(sorted.Column(c))
	}
	for i := range int(sorted.NumRows()) {
		f.minSeq, f.maxSeq = min(f.minSeq, seqAt(i)), max(f.maxSeq, seqAt(i))
	}
	if f.maxKey, err = s.keyRow(sorted, keys, int(sorted.NumRows())-1); err != nil {
		return err
	}
	// The value stats observe the rows; the file holds their key-value
	// layout.
	if err := f.pf.WriteAs(file, sorted); err != nil {
		return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: write %s", s.st.ident, f.rel))
	}
	return nil
}

// keyRow is row i's trimmed primary key as a BinaryRow.
func (s *stream) keyRow(rec arrow.RecordBatch, keys []int, i int) (pcodec.Row, error) {
	kv := make([]any, len(keys))
	for j, c := range keys {
		kv[j] = value(rec.Column(c), i)
	}
	r, err := pcodec.BuildRow(s.typesOf(keys), kv)
	if err != nil {
		return pcodec.Row{}, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: key row", s.st.ident))
	}
	return r, nil
}

// rowComparator orders the rows of cols (the key columns, in order) as
// Paimon orders keys: typed comparisons for the common key types, the
// generic value comparison for the rest; nulls (which a primary key does
// not hold) first.
func rowComparator(cols []arrow.Array) func(a, b int) int {
	cmps := make([]func(a, b int) int, len(cols))
	for j, col := range cols {
		cmps[j] = columnComparator(col)
	}
	return func(a, b int) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	}
}

func columnComparator(col arrow.Array) func(a, b int) int {
	var cmpValid func(a, b int) int
	switch c := col.(type) {
	case *array.Int8:
		cmpValid = func(a, b int) int { return cmp3(int64(c.Value(a)), int64(c.Value(b))) }
	case *array.Int16:
		cmpValid = func(a, b int) int { return cmp3(int64(c.Value(a)), int64(c.Value(b))) }
	case *array.Int32:
		cmpValid = func(a, b int) int { return cmp3(int64(c.Value(a)), int64(c.Value(b))) }
	case *array.Int64:
		cmpValid = func(a, b int) int { return cmp3(c.Value(a), c.Value(b)) }
	case *array.Date32:
		cmpValid = func(a, b int) int { return cmp3(int64(c.Value(a)), int64(c.Value(b))) }
	case *array.Timestamp:
		// One unit per column: the raw values order as Paimon's timestamps.
		cmpValid = func(a, b int) int { return cmp3(int64(c.Value(a)), int64(c.Value(b))) }
	case *array.String:
		cmpValid = func(a, b int) int { return strings.Compare(c.Value(a), c.Value(b)) }
	default:
		cmpValid = func(a, b int) int { return compare(value(col, a), value(col, b)) }
	}
	if col.NullN() == 0 {
		return cmpValid
	}
	return func(a, b int) int {
		na, nb := col.IsNull(a), col.IsNull(b)
		switch {
		case na && nb:
			return 0
		case na:
			return -1
		case nb:
			return 1
		}
		return cmpValid(a, b)
	}
}

// keyValueBatch lays sorted rows out as Paimon's KeyValue files do:
// _KEY_<k> for each key column, _SEQUENCE_NUMBER, _VALUE_KIND (0:
// insert), then every column of the table; row i's sequence number is
// seqAt(i).
func (s *stream) keyValueBatch(rec arrow.RecordBatch, keys []int, seqAt func(int) int64) (arrow.RecordBatch, error) {
	var fields []arrow.Field
	var cols []arrow.Array
	for _, c := range keys {
		col := s.st.schema.cols[c]
		fields = append(fields, arrowField(keyFieldPrefix+col.name, col.arrow, false, keyFieldIDStart+col.id))
		cols = append(cols, rec.Column(c))
	}
	n := int(rec.NumRows())
	sb := array.NewInt64Builder(memory.DefaultAllocator)
	defer sb.Release()
	kb := array.NewInt8Builder(memory.DefaultAllocator)
	defer kb.Release()
	for i := range n {
		sb.Append(seqAt(i))
		kb.Append(0)
	}
	sa, ka := sb.NewArray(), kb.NewArray()
	defer sa.Release()
	defer ka.Release()
	fields = append(fields, arrowField(seqField, arrow.PrimitiveTypes.Int64, false, seqFieldID),
		arrowField(kindField, arrow.PrimitiveTypes.Int8, false, kindFieldID))
	cols = append(cols, sa, ka)
	for i, f := range s.target.Fields() {
		fields = append(fields, f)
		cols = append(cols, rec.Column(i))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n)), nil
}

// seqFor returns the next sequence number of a bucket: one past the
// highest of its live files, so that this write's rows win the merge
// against every committed row of their keys.
func (s *stream) seqFor(ctx context.Context, g *group) (int64, error) {
	if n, ok := s.nextSeq[g.key]; ok {
		return n, nil
	}
	live, err := s.p.liveFiles(ctx, s.st.ident, s.st.dir, s.st.snap)
	if err != nil {
		return 0, err
	}
	next := int64(0)
	for _, e := range live {
		if e.bucket == g.bucket && e.partition.Equal(g.partition) {
			next = max(next, e.file.MaxSequenceNumber+1)
		}
	}
	s.nextSeq[g.key] = next
	return next, nil
}

// concat joins batches of one schema into one.
func concat(schema *arrow.Schema, bs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(bs) == 1 {
		bs[0].Retain()
		return bs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var n int64
	for _, b := range bs {
		n += b.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(bs))
		for j, b := range bs {
			parts[j] = b.Column(i)
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}
