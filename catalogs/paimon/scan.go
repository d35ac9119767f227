package paimon

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
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
			rec, err = r.p.mergeBucket(r.ctx, r.st, r.buckets[0], r.schema)
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
	var idx []int
	for _, f := range fields {
		is := fsch.FieldIndices(f.Name)
		if len(is) != 1 {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %s has no column %q (schema evolution is not supported by this backend)", st.ident, e.file.FileName, f.Name)
		}
		idx = append(idx, is[0])
	}
	rgs := make([]int, pr.NumRowGroups())
	for i := range rgs {
		rgs[i] = i
	}
	tbl, err := fr.ReadRowGroups(ctx, idx, rgs)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: read %s", st.ident, e.file.FileName))
	}
	defer tbl.Release()
	cols := make([]arrow.Array, len(fields))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range fields {
		ch := tbl.Column(i).Data()
		a, err := array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
		if len(ch.Chunks()) == 0 {
			a, err = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0), nil
		}
		if err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: read %s", st.ident, e.file.FileName))
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
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, tbl.NumRows()), nil
}

// mergeBucket merges the key-value files of one bucket of a primary-key
// table: for each key the row with the highest sequence number wins, and
// is dropped when it is a deletion (UPDATE_BEFORE or DELETE).
func (p *Provider) mergeBucket(ctx context.Context, st *tableState, es []entry, want *arrow.Schema) (arrow.RecordBatch, error) {
	keys := st.schema.layout().trimmedPrimary()
	read := want
	full := st.schema.arrowSchema()
	for _, k := range keys {
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
	type best struct {
		row int
		seq int64
	}
	win := map[string]best{}
	var order []string
	for i := range int(all.NumRows()) {
		var kb []byte
		for _, c := range keyCols {
			kb = fmt.Appendf(kb, "%v\x00", value(c, i))
		}
		k := string(kb)
		b, ok := win[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || seqs.Value(i) >= b.seq {
			win[k] = best{row: i, seq: seqs.Value(i)}
		}
	}
	var rows []int
	for _, k := range order {
		b := win[k]
		if kd := kinds.Value(b.row); kd == 1 || kd == 3 {
			continue
		}
		rows = append(rows, b.row)
	}
	picked, err := take(ctx, all, rows)
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
