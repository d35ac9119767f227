package paimon

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
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

// pkBuffer holds the rows of one partition and bucket of a primary-key
// table until the stream closes: a level-0 file is sorted by key with one
// row per key, which needs every row of the file at hand.
type pkBuffer struct {
	g       *group
	batches []arrow.RecordBatch
}

func (b *pkBuffer) release() {
	for _, r := range b.batches {
		r.Release()
	}
	b.batches = nil
}

func (s *stream) bufferPK(_ context.Context, g *group, rec arrow.RecordBatch) error {
	b, ok := s.pk[g.key]
	if !ok {
		b = &pkBuffer{g: g}
		s.pk[g.key] = b
	}
	rec.Retain()
	b.batches = append(b.batches, rec)
	return nil
}

// flushPK writes one level-0 file per buffered partition and bucket: rows
// sorted by the trimmed primary key, the last row of each key kept (a
// later write of a key within one stream wins, as it would across
// commits), sequence numbers continuing the bucket's.
func (s *stream) flushPK(ctx context.Context) error {
	for _, k := range sortedKeys(s.pk) {
		b := s.pk[k]
		err := s.writePKFile(ctx, b)
		b.release()
		delete(s.pk, k)
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *stream) writePKFile(ctx context.Context, b *pkBuffer) error {
	rec, err := concat(s.target, b.batches)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: buffer rows", s.st.ident))
	}
	defer rec.Release()
	keys := s.lay.trimmedPrimary()
	n := int(rec.NumRows())
	keyVals := make([][]any, n)
	for i := range n {
		kv := make([]any, len(keys))
		for j, c := range keys {
			kv[j] = value(rec.Column(c), i)
		}
		keyVals[i] = kv
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	cmpKeys := func(a, b []any) int {
		for j := range a {
			if c := compare(a[j], b[j]); c != 0 {
				return c
			}
		}
		return 0
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpKeys(keyVals[a], keyVals[b]) })
	kept := idx[:0:0]
	for i, r := range idx {
		if i+1 < len(idx) && cmpKeys(keyVals[r], keyVals[idx[i+1]]) == 0 {
			continue // a later row of the same key follows
		}
		kept = append(kept, r)
	}
	sorted, err := take(ctx, rec, kept)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: sort rows", s.st.ident))
	}
	defer sorted.Release()
	seq, err := s.seqFor(ctx, b.g)
	if err != nil {
		return err
	}
	file, err := s.keyValueBatch(sorted, keys, seq)
	if err != nil {
		return err
	}
	defer file.Release()
	w, err := s.newFile(ctx, b.g, file)
	if err != nil {
		return err
	}
	w.seq = seq
	s.nextSeq[b.g.key] = seq + sorted.NumRows()
	for i := range w.stats {
		w.stats[i].add(sorted.Column(i))
	}
	keyTypes := s.typesOf(keys)
	w.keyStats = make([]colStats, len(keys))
	for j, c := range keys {
		w.keyStats[j] = newColStats(s.st.schema.cols[c].arrow)
		w.keyStats[j].add(sorted.Column(c))
	}
	if w.minKey, err = pcodec.BuildRow(keyTypes, keyVals[kept[0]]); err == nil {
		w.maxKey, err = pcodec.BuildRow(keyTypes, keyVals[kept[len(kept)-1]])
	}
	if err != nil {
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: key row", s.st.ident))
	}
	if err := w.fw.WriteBuffered(file); err != nil {
		return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: write %s", s.st.ident, w.rel))
	}
	w.rows = file.NumRows()
	return s.finish(w)
}

// keyValueBatch lays sorted rows out as Paimon's KeyValue files do:
// _KEY_<k> for each key column, _SEQUENCE_NUMBER, _VALUE_KIND (0:
// insert), then every column of the table.
func (s *stream) keyValueBatch(rec arrow.RecordBatch, keys []int, seq int64) (arrow.RecordBatch, error) {
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
		sb.Append(seq + int64(i))
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
