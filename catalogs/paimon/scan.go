package paimon

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/internal/arrowconv"
)

// Scan reads the table's committed rows: every live data file of the
// snapshot, read by column name. A primary-key table is merged on read
// (per bucket, the row of the highest sequence number of each key wins and
// deletions drop it), as Paimon's merge-on-read does with the
// deduplicate merge engine. Filters are not applied (the engine applies
// them).
func (p *Provider) Scan(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	if req.SnapshotID != nil && (st.snap == nil || *req.SnapshotID != st.snap.ID) {
		s, err := p.readSnapshot(ctx, t, st.dir, *req.SnapshotID)
		if err != nil {
			return nil, lake.MapErr(err, fmt.Sprintf("table %s: snapshot %d", t, *req.SnapshotID))
		}
		st.snap = s
	}
	live, err := p.liveFiles(ctx, t, st.dir, st.snap)
	if err != nil {
		return nil, err
	}
	return p.scanEntries(ctx, st, req, live, len(live))
}

// scanEntries reads the data files es of a table (Scan's snapshot, or
// ScanStaged's view of a transaction) as Scan does; total is the number
// of files the read chose from.
func (p *Provider) scanEntries(ctx context.Context, st *tableState, req catalogs.ScanRequest, es []entry, total int) (*catalogs.ScanResult, error) {
	t := st.ident
	if err := p.checkReadableState(ctx, st); err != nil {
		return nil, err
	}
	if dvEnabled(st.schema) {
		d, err := p.loadDeletions(ctx, st)
		if err != nil {
			return nil, err
		}
		st.deletions = d
	}
	if strings.TrimSpace(st.schema.Options[optBucket]) == "-2" {
		// Postponed buckets: Java's batch read takes the real buckets only
		// (onlyReadRealBuckets); bucket-postpone's rows wait for a compaction.
		es = slices.DeleteFunc(slices.Clone(es), func(e entry) bool { return e.bucket == postponeBucket })
	}
	if (dvEnabled(st.schema) && len(st.schema.PrimaryKeys) > 0) || firstRow(st.schema) {
		// Paimon's batch read skips level 0 here (batchScanSkipLevel0):
		// its rows become visible once compacted.
		es = slices.DeleteFunc(slices.Clone(es), func(e entry) bool { return e.file.Level == 0 })
	}
	full := st.schema.arrowSchema()
	cols := req.Columns
	if cols == nil {
		for _, f := range full.Fields() {
			cols = append(cols, f.Name)
		}
	}
	var fields []arrow.Field
	for _, c := range cols {
		i := st.schema.index(c)
		if i < 0 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", t, c)
		}
		fields = append(fields, full.Field(i))
	}
	out := arrow.NewSchema(fields, nil)
	r := &fileReader{p: p, ctx: ctx, st: st, schema: out, files: es, refs: 1}
	if len(st.schema.PrimaryKeys) > 0 {
		r.buckets = groupBuckets(es)
	}
	return &catalogs.ScanResult{Reader: r, FilesPlanned: len(es), FilesTotal: total}, nil
}

// filePath is a data file's path relative to the warehouse.
func (st *tableState) filePath(e entry) string {
	return st.dir + "/" + st.partitionDir(e) + "bucket-" + fmt.Sprint(e.bucket) + "/" + e.file.FileName
}

// partitionDir is the partition directory of an entry, from its
// partition row, as Paimon derives it.
func (st *tableState) partitionDir(e entry) string {
	if len(st.schema.PartitionKeys) == 0 {
		return ""
	}
	types := make([]column, len(st.schema.PartitionKeys))
	for i, k := range st.schema.PartitionKeys {
		types[i] = st.schema.cols[st.schema.index(k)]
	}
	vals := make([]any, len(types))
	for i, c := range types {
		v, err := e.partition.Get(i, c.typ)
		if err == nil {
			vals[i] = v
		}
	}
	return partitionPath(st.schema.PartitionKeys, vals)
}

func groupBuckets(live []entry) [][]entry {
	idx := map[string]int{}
	var out [][]entry
	for _, e := range live {
		k := fmt.Sprintf("%x/%d", e.partition.Bytes(), e.bucket)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// fileReader is the scan's RecordReader: it reads one data file (or, for
// a primary-key table, one bucket) at a time.
type fileReader struct {
	p       *Provider
	ctx     context.Context
	st      *tableState
	schema  *arrow.Schema
	files   []entry
	buckets [][]entry
	cur     arrow.RecordBatch
	err     error
	refs    int64
}

func (r *fileReader) Retain() { atomic.AddInt64(&r.refs, 1) }

func (r *fileReader) Release() {
	if atomic.AddInt64(&r.refs, -1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *fileReader) Schema() *arrow.Schema { return r.schema }

func (r *fileReader) Err() error { return r.err }

func (r *fileReader) Record() arrow.RecordBatch { return r.cur }

func (r *fileReader) RecordBatch() arrow.RecordBatch { return r.cur }

func (r *fileReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	for {
		var rec arrow.RecordBatch
		var err error
		switch {
		case r.buckets != nil && len(r.buckets) > 0:
			rec, err = r.p.mergeBucket(r.ctx, r.st, r.buckets[0], r.schema, nil)
			r.buckets = r.buckets[1:]
		case r.buckets == nil && len(r.files) > 0:
			rec, err = r.p.readFile(r.ctx, r.st, r.files[0], r.schema, nil)
			r.files = r.files[1:]
		default:
			return false
		}
		if err != nil {
			r.err = err
			return false
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		r.cur = rec
		return true
	}
}

// readFile reads the named columns of one data file (plus extra ones, the
// system columns of a key-value file) and converts them to the table's
// types.
func (p *Provider) readFile(ctx context.Context, st *tableState, e entry, want *arrow.Schema, extra []arrow.Field) (arrow.RecordBatch, error) {
	if ext := fileFormat(e.file.FileName); ext != "parquet" {
		// Paimon names a data file after its format (DataFilePathFactory);
		// reading an ORC file as Parquet fails with a misleading error.
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %s is %s (option %q): this backend reads Parquet data files only", st.ident, e.file.FileName, ext, optFileFormat)
	}
	path := st.filePath(e)
	f, err := p.fs.Open(ctx, path)
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: data file %s", st.ident, e.file.FileName))
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: data file %s", st.ident, e.file.FileName))
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: data file %s", st.ident, e.file.FileName))
	}
	fsch, err := fr.Schema()
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: data file %s schema", st.ident, e.file.FileName))
	}
	fields := append(append([]arrow.Field{}, extra...), want.Fields()...)
	// Columns Paimon Java wrote as INT96 (TIMESTAMP(7..9)) are read here:
	// arrow-go refuses the negative nanoseconds of day Java writes for an
	// instant before 1970 (it splits epoch millis by truncating division).
	var idx []int
	int96 := map[int]int{} // field position → leaf column
	for i, f := range fields {
		is := fsch.FieldIndices(f.Name)
		if len(is) != 1 {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %s has no column %q (schema evolution is not supported by this backend)", st.ident, e.file.FileName, f.Name)
		}
		if leaf := fr.Manifest.Fields[is[0]].ColIndex; leaf >= 0 && pr.MetaData().Schema.Column(leaf).PhysicalType() == parquet.Types.Int96 {
			int96[i] = leaf
			continue
		}
		idx = append(idx, is[0])
	}
	rgs := make([]int, pr.NumRowGroups())
	for i := range rgs {
		rgs[i] = i
	}
	rows := pr.NumRows()
	var tbl arrow.Table
	if len(idx) > 0 {
		if tbl, err = fr.ReadRowGroups(ctx, idx, rgs); err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: read %s", st.ident, e.file.FileName))
		}
		defer tbl.Release()
		rows = tbl.NumRows()
	}
	cols := make([]arrow.Array, len(fields))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	next := 0 // the next column of tbl
	for i, f := range fields {
		var a arrow.Array
		var err error
		if leaf, ok := int96[i]; ok {
			a, err = readInt96(pr, leaf)
		} else {
			ch := tbl.Column(next).Data()
			next++
			a, err = array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
			if len(ch.Chunks()) == 0 {
				a, err = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0), nil
			}
		}
		if err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: read %s", st.ident, e.file.FileName))
		}
		if fb, ok := f.Type.(*arrow.FixedSizeBinaryType); ok && a.DataType().ID() == arrow.BINARY {
			// Paimon Java writes BINARY(n) as a Parquet BYTE_ARRAY; arrow-go
			// has no cast kernel from binary to fixed_size_binary.
			c, err := toFixedSize(a.(*array.Binary), fb)
			a.Release()
			if err != nil {
				return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %s: column %q: %v", st.ident, e.file.FileName, f.Name, err)
			}
			a = c
		}
		if !arrow.TypeEqual(a.DataType(), f.Type) {
			c, err := compute.CastArray(ctx, a, compute.UnsafeCastOptions(f.Type))
			a.Release()
			if err != nil {
				return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %s: column %q: %v", st.ident, e.file.FileName, f.Name, err)
			}
			a = c
		}
		cols[i] = a
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rows)
	d, ok := st.deletions[dvKey(serializeRow(e.partition), e.bucket, e.file.FileName)]
	if !ok {
		return rec, nil
	}
	defer rec.Release()
	bm, err := p.readDeletionVector(ctx, st, d)
	if err != nil {
		return nil, err
	}
	keep := make([]int, 0, rows)
	for i := range int(rows) {
		if !bm.Contains(uint32(i)) {
			keep = append(keep, i)
		}
	}
	out, err := arrowconv.Take(ctx, rec, keep)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: apply the deletion vector of %s", st.ident, e.file.FileName))
	}
	return out, nil
}

// julianUnixEpoch is the Julian day of 1970-01-01, INT96's day origin.
const julianUnixEpoch = 2440588

// int96Nanos is the instant of an INT96 timestamp as Paimon Java reads
// it: Julian day and nanoseconds of day, the latter signed, for Java
// writes julianDay = millis / day and nanosOfDay = millis % day × 10⁶ +
// nanos with truncating division, so an instant before 1970 has a
// negative one.
func int96Nanos(v parquet.Int96) int64 {
	nanos := int64(binary.LittleEndian.Uint64(v[:8]))
	days := int64(binary.LittleEndian.Uint32(v[8:])) - julianUnixEpoch
	return days*86_400_000_000_000 + nanos
}

// readInt96 reads an INT96 leaf column of every row group as a
// nanosecond timestamp array (a flat, optional or required column).
func readInt96(pr *file.Reader, leaf int) (arrow.Array, error) {
	b := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Nanosecond})
	defer b.Release()
	maxDef := pr.MetaData().Schema.Column(leaf).MaxDefinitionLevel()
	const batch = 4096
	vals := make([]parquet.Int96, batch)
	defs := make([]int16, batch)
	for rg := range pr.NumRowGroups() {
		cr, err := pr.RowGroup(rg).Column(leaf)
		if err != nil {
			return nil, err
		}
		r, ok := cr.(*file.Int96ColumnChunkReader)
		if !ok {
			return nil, fmt.Errorf("column %d is not INT96", leaf)
		}
		for r.HasNext() {
			total, _, err := r.ReadBatch(batch, vals, defs, nil)
			if err != nil {
				return nil, err
			}
			if total == 0 {
				break
			}
			v := 0
			for i := range int(total) {
				if maxDef > 0 && defs[i] < maxDef {
					b.AppendNull()
					continue
				}
				b.Append(arrow.Timestamp(int96Nanos(vals[v])))
				v++
			}
		}
	}
	return b.NewArray(), nil
}

// mergeBucket merges the key-value files of one bucket of a primary-key
// table: for each key the row with the highest sequence number wins (the
// lowest with merge-engine first-row), and is dropped when it is a
// deletion (UPDATE_BEFORE or DELETE). When maxSeq is not nil it receives
// each key's highest sequence number (by keyString of its key values),
// the sequence number a compaction gives the merged row.
func (p *Provider) mergeBucket(ctx context.Context, st *tableState, es []entry, want *arrow.Schema, maxSeq map[string]int64) (arrow.RecordBatch, error) {
	keys := st.schema.layout().trimmedPrimary()
	read := want
	full := st.schema.arrowSchema()
	seqNames := splitList(st.schema.Options[optSequenceField])
	need := slices.Clone(keys)
	for _, n := range seqNames {
		i := st.schema.index(n)
		if i < 0 {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %q names column %q, which is not in the table", st.ident, optSequenceField, n)
		}
		need = append(need, i)
	}
	for _, k := range need {
		if len(read.FieldIndices(full.Field(k).Name)) == 0 {
			read = arrow.NewSchema(append(read.Fields(), full.Field(k)), nil)
		}
	}
	extra := []arrow.Field{{Name: seqField, Type: arrow.PrimitiveTypes.Int64}, {Name: kindField, Type: arrow.PrimitiveTypes.Int8}}
	var parts []arrow.RecordBatch
	defer func() {
		for _, b := range parts {
			b.Release()
		}
	}()
	for _, e := range es {
		b, err := p.readFile(ctx, st, e, read, extra)
		if err != nil {
			return nil, err
		}
		parts = append(parts, b)
	}
	if len(parts) == 0 {
		return array.NewRecordBatch(want, nil, 0), nil
	}
	all, err := concat(parts[0].Schema(), parts)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: merge bucket", st.ident))
	}
	defer all.Release()
	keyCols := make([]arrow.Array, len(keys))
	for j, k := range keys {
		keyCols[j] = all.Column(2 + read.FieldIndices(full.Field(k).Name)[0])
	}
	seqs := all.Column(0).(*array.Int64)
	kinds := all.Column(1).(*array.Int8)
	seqCols := make([]arrow.Array, len(seqNames))
	for j, n := range seqNames {
		seqCols[j] = all.Column(2 + read.FieldIndices(n)[0])
	}
	desc := strings.EqualFold(strings.TrimSpace(st.schema.Options[optSequenceOrder]), "descending")
	// after reports whether row i sorts at or after row j in Paimon's
	// merge order: by the sequence fields (sequence.field, in
	// sequence.field.sort-order), then by the sequence number.
	var nullSeq error
	after := func(i, j int) bool {
		for _, c := range seqCols {
			if c.IsNull(i) || c.IsNull(j) {
				nullSeq = catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: a row has a null %q (option %q): this backend does not order null sequence fields and refuses to read it", st.ident, seqNames, optSequenceField)
				return false
			}
			r := compare(value(c, i), value(c, j))
			if desc {
				r = -r
			}
			if r != 0 {
				return r > 0
			}
		}
		return seqs.Value(i) >= seqs.Value(j)
	}
	type best struct {
		row int
	}
	keyOf := keyString(keyCols)
	if maxSeq != nil {
		for i := range int(all.NumRows()) {
			k := keyOf(i)
			if v, ok := maxSeq[k]; !ok || seqs.Value(i) > v {
				maxSeq[k] = seqs.Value(i)
			}
		}
	}
	if partialUpdate(st.schema) || aggregation(st.schema) {
		merge := p.mergePartial
		if aggregation(st.schema) {
			merge = p.mergeAggregate
		}
		rec, err := merge(ctx, st, all, read, want, keyOf, after)
		if err == nil && nullSeq != nil {
			rec.Release()
			err = nullSeq
		}
		return rec, err
	}
	// The deduplicate engine keeps a key's last row, first-row its first.
	first := firstRow(st.schema)
	win := map[string]best{}
	var order []string
	for i := range int(all.NumRows()) {
		k := keyOf(i)
		b, ok := win[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || (!first && after(i, b.row)) || (first && seqs.Value(i) < seqs.Value(b.row)) {
			win[k] = best{row: i}
		}
	}
	if nullSeq != nil {
		return nil, nullSeq
	}
	var rows []int
	for _, k := range order {
		b := win[k]
		if kd := kinds.Value(b.row); kd == 1 || kd == 3 {
			continue
		}
		rows = append(rows, b.row)
	}
	picked, err := arrowconv.Take(ctx, all, rows)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: merge bucket", st.ident))
	}
	defer picked.Release()
	cols := make([]arrow.Array, want.NumFields())
	for i, f := range want.Fields() {
		cols[i] = picked.Column(2 + read.FieldIndices(f.Name)[0])
	}
	return array.NewRecordBatch(want, cols, picked.NumRows()), nil
}

// keyString is the merge's identity of row i's key in cols (the key
// columns, in order). Each key value is length-prefixed: a separator
// alone would make ("x\x00", "y") and ("x", "\x00y") one key.
func keyString(cols []arrow.Array) func(i int) string {
	return func(i int) string {
		var kb []byte
		for _, c := range cols {
			v := fmt.Sprint(value(c, i))
			kb = strconv.AppendInt(kb, int64(len(v)), 10)
			kb = append(kb, ':')
			kb = append(kb, v...)
		}
		return string(kb)
	}
}

// fileFormat is the format a data file's name says (its extension, before
// a compression suffix Paimon may add: data-….orc.zstd), lowercase.
func fileFormat(name string) string {
	parts := strings.Split(strings.ToLower(name), ".")
	for i := len(parts) - 1; i > 0; i-- {
		switch parts[i] {
		case "parquet", "orc", "avro", "csv", "json", "lance", "blob":
			return parts[i]
		}
	}
	return "of an unknown format"
}

// toFixedSize converts a binary array whose values are all n bytes long
// to fixed_size_binary(n).
func toFixedSize(a *array.Binary, dt *arrow.FixedSizeBinaryType) (arrow.Array, error) {
	b := array.NewFixedSizeBinaryBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for i := range a.Len() {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		v := a.Value(i)
		if len(v) != dt.ByteWidth {
			return nil, fmt.Errorf("a value of %d bytes in a BINARY(%d) column", len(v), dt.ByteWidth)
		}
		b.Append(v)
	}
	return b.NewArray(), nil
}
