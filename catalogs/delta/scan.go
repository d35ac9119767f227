package delta

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// Scan reads the snapshot's live files (the latest version, or
// SnapshotID's): data columns from Parquet by physical name, partition
// columns from the add's partition values, deletion vectors applied.
// Filters are not applied (the engine applies them).
func (p *Provider) Scan(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	version := int64(-1)
	if req.SnapshotID != nil {
		version = *req.SnapshotID
	}
	st, err := p.load(ctx, t, version)
	if err != nil {
		return nil, err
	}
	if err := dcodec.CheckRead(&st.snap.Protocol); err != nil {
		return nil, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s", t))
	}
	r, err := p.newScanReader(ctx, st, req.Columns, st.snap.Files)
	if err != nil {
		return nil, err
	}
	return &catalogs.ScanResult{Reader: r, FilesPlanned: len(r.files), FilesTotal: len(r.files)}, nil
}

// scanFiles reads every column of files of st, deletion vectors applied
// (OPTIMIZE's rewrite).
func (p *Provider) scanFiles(ctx context.Context, st *tableState, files []*dcodec.AddFile) (*scanReader, error) {
	return p.newScanReader(ctx, st, nil, files)
}

// newScanReader reads cols (every column when nil) of files of st.
func (p *Provider) newScanReader(ctx context.Context, st *tableState, cols []string, files []*dcodec.AddFile) (*scanReader, error) {
	t := st.ident
	phys, err := dcodec.ArrowSchema(st.snap.Schema, dcodec.PhysicalNames)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: schema", t))
	}
	if cols == nil {
		for _, f := range st.schema.Fields() {
			cols = append(cols, f.Name)
		}
	}
	partCols := map[string]bool{}
	for _, c := range st.snap.Metadata.PartitionColumns {
		partCols[c] = true
	}
	mapped := phys.String() != st.schema.String()
	r := &scanReader{p: p, ctx: ctx, st: st, files: files, refs: 1}
	var fields []arrow.Field
	for _, c := range cols {
		is := st.schema.FieldIndices(c)
		if len(is) != 1 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", t, c)
		}
		f := st.schema.Field(is[0])
		pf := phys.Field(is[0])
		sc := scanCol{field: f, phys: pf.Name, typ: st.snap.Schema.Fields[is[0]].Type, part: partCols[c]}
		if mapped && !arrow.TypeEqual(f.Type, pf.Type) {
			sc.physType = pf.Type // nested fields by physical name in the files
		}
		fields = append(fields, f)
		r.cols = append(r.cols, sc)
	}
	r.schema = arrow.NewSchema(fields, nil)
	return r, nil
}

type scanCol struct {
	field arrow.Field
	phys  string // the name in data files and partition values
	// physType, under column mapping, is a nested column's type in the
	// data files: its struct fields by physical name.
	physType arrow.DataType
	typ      dcodec.DataType // the Delta type, for partition values
	part     bool
}

// scanReader reads one row group at a time of each file in turn.
type scanReader struct {
	p      *Provider
	ctx    context.Context
	st     *tableState
	schema *arrow.Schema
	cols   []scanCol
	files  []*dcodec.AddFile
	refs   int64

	cur arrow.RecordBatch
	err error
	// the file being read
	obj     lake.Object
	pr      *file.Reader
	fr      *pqarrow.FileReader
	add     *dcodec.AddFile
	idx     []int // the data columns' fields in the file, in r.cols order (or colPartition, colMissing)
	rg      int   // next row group
	offset  int64 // the row index of row group rg in the file
	deleted []uint64
}

func (r *scanReader) Retain() { atomic.AddInt64(&r.refs, 1) }

func (r *scanReader) Release() {
	if atomic.AddInt64(&r.refs, -1) == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		r.closeFile()
	}
}

func (r *scanReader) Schema() *arrow.Schema          { return r.schema }
func (r *scanReader) Err() error                     { return r.err }
func (r *scanReader) Record() arrow.RecordBatch      { return r.cur }
func (r *scanReader) RecordBatch() arrow.RecordBatch { return r.cur }

func (r *scanReader) closeFile() {
	if r.pr != nil {
		_ = r.pr.Close()
		r.pr = nil
	}
	if r.obj != nil {
		_ = r.obj.Close()
		r.obj = nil
	}
	r.fr = nil
}

func (r *scanReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for r.err == nil {
		if r.pr == nil {
			if len(r.files) == 0 {
				return false
			}
			r.add, r.files = r.files[0], r.files[1:]
			if r.err = r.openFile(); r.err != nil {
				return false
			}
		}
		if r.rg >= r.pr.NumRowGroups() {
			r.closeFile()
			continue
		}
		rec, err := r.readRowGroup()
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
	return false
}

func (r *scanReader) fileErr(err error, what string) error {
	return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: data file %s: %s", r.st.ident, r.add.Path, what))
}

func (r *scanReader) openFile() error {
	rel, err := dcodec.DecodePath(r.add.Path)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: data file %q", r.st.ident, r.add.Path))
	}
	if strings.Contains(rel, "://") || strings.HasPrefix(rel, "/") {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %q: absolute paths are not readable by this backend", r.st.ident, r.add.Path)
	}
	path, err := lake.Join(r.st.dir, rel)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: data file %q", r.st.ident, r.add.Path))
	}
	r.deleted = nil
	if dv := r.add.DeletionVector; dv != nil {
		if r.deleted, err = r.p.deletedRows(r.ctx, r.st, dv); err != nil {
			return err
		}
	}
	if r.obj, err = r.p.fs.Open(r.ctx, path); err != nil {
		return lake.MapErr(err, fmt.Sprintf("table %s: data file %s", r.st.ident, rel))
	}
	if r.pr, err = file.NewParquetReader(r.obj); err != nil {
		_ = r.obj.Close()
		r.obj = nil
		return r.fileErr(err, "open")
	}
	if r.fr, err = pqarrow.NewFileReader(r.pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator); err != nil {
		r.closeFile()
		return r.fileErr(err, "open")
	}
	fsch, err := r.fr.Schema()
	if err != nil {
		r.closeFile()
		return r.fileErr(err, "schema")
	}
	r.idx = r.idx[:0]
	for _, c := range r.cols {
		if c.part {
			r.idx = append(r.idx, colPartition)
			continue
		}
		is := fsch.FieldIndices(c.phys)
		if len(is) == 0 {
			// A column added after the file was written (ALTER TABLE ADD
			// COLUMNS, or one dropped and added again under column
			// mapping, a new physical name): null in every row of it, as
			// every Delta reader reads it.
			r.idx = append(r.idx, colMissing)
			continue
		}
		if len(is) != 1 {
			r.closeFile()
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %s has no column %q", r.st.ident, rel, c.phys)
		}
		r.idx = append(r.idx, is[0])
	}
	r.rg, r.offset = 0, 0
	return nil
}

// Marks in scanReader.idx for columns not read from the file.
const (
	colPartition = -1 // from the add's partition values
	colMissing   = -2 // not in the file: null
)

// readRowGroup reads row group r.rg of the open file as one batch of the
// scan's schema, without the rows its deletion vector deletes.
func (r *scanReader) readRowGroup() (arrow.RecordBatch, error) {
	rg := r.rg
	r.rg++
	n := r.pr.MetaData().RowGroup(rg).NumRows()
	off := r.offset
	r.offset += n
	// ReadRowGroups takes leaf column indexes and returns the fields
	// holding them in file order.
	var read []int
	for _, i := range r.idx {
		if i >= 0 {
			read = appendLeaves(read, &r.fr.Manifest.Fields[i])
		}
	}
	var tbl arrow.Table
	if len(read) > 0 {
		var err error
		if tbl, err = r.fr.ReadRowGroups(r.ctx, read, []int{rg}); err != nil {
			return nil, r.fileErr(err, "read")
		}
		defer tbl.Release()
	}
	cols := make([]arrow.Array, 0, len(r.cols))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for j, c := range r.cols {
		var a arrow.Array
		var err error
		switch r.idx[j] {
		case colPartition:
			a, err = r.partitionColumn(c, int(n))
		case colMissing:
			a = array.MakeArrayOfNull(memory.DefaultAllocator, c.field.Type, int(n))
		default:
			is := tbl.Schema().FieldIndices(c.phys)
			if len(is) != 1 {
				return nil, r.fileErr(fmt.Errorf("column %q not read", c.phys), "read")
			}
			a, err = r.dataColumn(c, tbl.Column(is[0]).Data().Chunks())
		}
		if err != nil {
			return nil, err
		}
		cols = append(cols, a)
	}
	rec := array.NewRecordBatch(r.schema, cols, n)
	if len(r.deleted) == 0 {
		return rec, nil
	}
	defer rec.Release()
	mask := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer mask.Release()
	del := r.deleted
	for i := int64(0); i < n; i++ {
		row := uint64(off + i)
		for len(del) > 0 && del[0] < row {
			del = del[1:]
		}
		mask.Append(!(len(del) > 0 && del[0] == row))
	}
	m := mask.NewArray()
	defer m.Release()
	out, err := compute.FilterRecordBatch(r.ctx, rec, m, compute.DefaultFilterOptions())
	if err != nil {
		return nil, r.fileErr(err, "apply deletion vector")
	}
	return out, nil
}

// appendLeaves appends the leaf column indexes under f.
func appendLeaves(out []int, f *pqarrow.SchemaField) []int {
	if f.ColIndex >= 0 {
		return append(out, f.ColIndex)
	}
	for i := range f.Children {
		out = appendLeaves(out, &f.Children[i])
	}
	return out
}

// dataColumn concatenates a column's chunks and casts it to the table's
// type when the file stores it otherwise.
func (r *scanReader) dataColumn(c scanCol, chunks []arrow.Array) (arrow.Array, error) {
	var a arrow.Array
	var err error
	if len(chunks) == 1 {
		a = chunks[0]
		a.Retain()
	} else if a, err = array.Concatenate(chunks, memory.DefaultAllocator); err != nil {
		return nil, r.fileErr(err, "read column "+c.phys)
	}
	if arrow.TypeEqual(a.DataType(), c.field.Type) {
		return a, nil
	}
	defer a.Release()
	want := c.field.Type
	if c.physType != nil {
		want = c.physType
	}
	// Struct fields added after the file was written (ALTER TABLE ADD
	// COLUMNS (s.f …)) are null in it, as for a top-level column.
	if filled := fillStructFields(a, want); filled != nil {
		defer filled.Release()
		if arrow.TypeEqual(filled.DataType(), c.field.Type) {
			filled.Retain()
			return filled, nil
		}
		a = filled
	}
	if c.physType != nil {
		if !arrow.TypeEqual(a.DataType(), c.physType) {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: data file %s: column %q is %s, the table's physical type %s (feature %q)", r.st.ident, r.add.Path, c.field.Name, a.DataType(), c.physType, dcodec.FeatureColumnMapping)
		}
		return retype(a, c.field.Type), nil
	}
	out, err := compute.CastArray(r.ctx, a, compute.SafeCastOptions(c.field.Type))
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: data file %s: column %q is %s, the table's type %s", r.st.ident, r.add.Path, c.field.Name, a.DataType(), c.field.Type))
	}
	return out, nil
}

// fillStructFields returns a with the fields of want's structs it lacks
// added as nulls, nested structs too, in want's order (fields matched by
// name: physical names under column mapping), or nil when a is not a
// struct that differs so. Lists and maps of structs are left alone (their
// cast fails).
func fillStructFields(a arrow.Array, want arrow.DataType) arrow.Array {
	d := fillStructData(a.Data(), want)
	if d == nil {
		return nil
	}
	defer d.Release()
	return array.MakeFromData(d)
}

func fillStructData(d arrow.ArrayData, want arrow.DataType) arrow.ArrayData {
	have, ok := d.DataType().(*arrow.StructType)
	wst, ok2 := want.(*arrow.StructType)
	if !ok || !ok2 {
		return nil
	}
	changed := false
	fields := make([]arrow.Field, 0, wst.NumFields())
	children := make([]arrow.ArrayData, 0, wst.NumFields())
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	for j, wf := range wst.Fields() {
		i, found := have.FieldIdx(wf.Name)
		changed = changed || (found && i != j) // reordered (ALTER COLUMN … AFTER)
		if !found {
			// The parent's offset applies to its children: the nulls
			// cover it too.
			n := array.MakeArrayOfNull(memory.DefaultAllocator, wf.Type, d.Offset()+d.Len())
			children = append(children, n.Data())
			n.Data().Retain()
			n.Release()
			fields = append(fields, wf)
			changed = true
			continue
		}
		c := d.Children()[i]
		if fc := fillStructData(c, wf.Type); fc != nil {
			children = append(children, fc)
			fields = append(fields, arrow.Field{Name: have.Field(i).Name, Type: fc.DataType(), Nullable: have.Field(i).Nullable, Metadata: have.Field(i).Metadata})
			changed = true
			continue
		}
		c.Retain()
		children = append(children, c)
		fields = append(fields, have.Field(i))
	}
	if !changed && have.NumFields() == len(fields) {
		return nil // (more fields than want's: a dropped one, left out here)
	}
	return array.NewData(arrow.StructOf(fields...), d.Len(), d.Buffers()[:1], children, d.NullN(), d.Offset())
}

// partitionColumn is n copies of the add's partition value of c.
func (r *scanReader) partitionColumn(c scanCol, n int) (arrow.Array, error) {
	v, err := dcodec.ParsePartitionValue(c.typ, r.add.PartitionValues[c.phys])
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: data file %s: partition column %q", r.st.ident, r.add.Path, c.field.Name))
	}
	b := array.NewBuilder(memory.DefaultAllocator, c.field.Type)
	defer b.Release()
	if v == nil {
		b.AppendNulls(n)
		return b.NewArray(), nil
	}
	appendOne := func() bool {
		switch b := b.(type) {
		case *array.StringBuilder:
			b.Append(v.(string))
		case *array.BinaryBuilder:
			b.Append(v.([]byte))
		case *array.BooleanBuilder:
			b.Append(v.(bool))
		case *array.Int8Builder:
			b.Append(v.(int8))
		case *array.Int16Builder:
			b.Append(v.(int16))
		case *array.Int32Builder:
			b.Append(v.(int32))
		case *array.Int64Builder:
			b.Append(v.(int64))
		case *array.Float32Builder:
			b.Append(v.(float32))
		case *array.Float64Builder:
			b.Append(v.(float64))
		case *array.Date32Builder:
			b.Append(arrow.Date32(v.(dcodec.Date)))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v.(dcodec.Timestamp)))
		case *array.Decimal128Builder:
			b.Append(v.(decimal128.Num))
		default:
			return false
		}
		return true
	}
	for i := 0; i < n; i++ {
		if !appendOne() {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: partition column %q of type %s is not readable by this backend", r.st.ident, c.field.Name, c.field.Type)
		}
	}
	return b.NewArray(), nil
}

// deletedRows reads a deletion vector: the row indexes it deletes.
func (p *Provider) deletedRows(ctx context.Context, st *tableState, dv *dcodec.DeletionVector) ([]uint64, error) {
	bad := func(err error) error {
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: deletion vector", st.ident))
	}
	var bm []byte
	var err error
	switch dv.StorageType {
	case "i":
		if bm, err = dv.InlineBitmap(); err != nil {
			return nil, bad(err)
		}
	case "u":
		rel, err := dv.AbsolutePath()
		if err != nil {
			return nil, bad(err)
		}
		path, err := lake.Join(st.dir, rel)
		if err != nil {
			return nil, bad(err)
		}
		data, err := p.fs.Read(ctx, path)
		if err != nil {
			return nil, lake.MapErr(err, fmt.Sprintf("table %s: deletion vector %s", st.ident, rel))
		}
		if bm, err = dv.StoredBitmap(data); err != nil {
			return nil, bad(err)
		}
	default:
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: deletion vector storage %q (an absolute path) is not readable by this backend", st.ident, dv.StorageType)
	}
	rows, err := dv.DeletedRows(bm)
	if err != nil {
		return nil, bad(err)
	}
	return rows, nil
}
