package iceberg

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// Scan reads the table's committed data with iceberg-go's scan planner:
// the projection and the filters (converted to Iceberg expressions) prune
// data files on partition values and column statistics. The reader streams
// batches; the caller releases it.
func (p *Provider) Scan(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	return p.scan(ctx, t, tbl, req, nil, false)
}

// scan is Scan over tbl with the data files staged added to the planned
// ones, which none are when skipCommitted (a staged overwrite). Staged
// files are not pruned: ReadTasks applies the row filter to every task.
func (p *Provider) scan(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, req catalogs.ScanRequest, staged []ice.DataFile, skipCommitted bool) (*catalogs.ScanResult, error) {
	opts := []table.ScanOption{}
	if req.Columns != nil {
		for _, c := range req.Columns {
			if _, ok := tbl.Schema().FindFieldByName(c); !ok {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q does not exist", t, c)
			}
		}
	}
	filter, err := filterExpr(tbl.Schema(), req.Filters)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t, err)
	}
	opts = append(opts, table.WithRowFilter(filter))
	snap := tbl.CurrentSnapshot()
	if req.SnapshotID != nil {
		snap = tbl.SnapshotByID(*req.SnapshotID)
		if snap == nil {
			return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s: snapshot %d does not exist", t, *req.SnapshotID)
		}
		opts = append(opts, table.WithSnapshotID(*req.SnapshotID))
	}
	// A projection that no column of some data file matches makes the
	// Parquet reader fail; an anchor column read along keeps every file's
	// row count and is dropped from the batches below.
	anchor := ""
	if req.Columns != nil {
		sel := req.Columns
		anchor = anchorColumn(tbl.Metadata(), scanSchema(tbl.Metadata(), snap, req.SnapshotID != nil), req.Columns)
		if anchor != "" {
			sel = append(slices.Clip(req.Columns), anchor)
		}
		opts = append(opts, table.WithSelectedFields(sel...))
	}
	res := &catalogs.ScanResult{}
	if snap != nil && snap.Summary != nil && !skipCommitted {
		res.FilesTotal, _ = strconv.Atoi(snap.Summary.Properties["total-data-files"])
	}
	res.FilesTotal += len(staged)
	var (
		sc      *arrow.Schema
		batches func(func(arrow.RecordBatch, error) bool)
	)
	err = protect(catalogs.ErrInvalidArgument, "scan", func() error {
		scan := tbl.Scan(opts...)
		var tasks []table.FileScanTask
		if !skipCommitted {
			if tasks, err = scan.PlanFiles(ctx); err != nil {
				return err
			}
		}
		for _, df := range staged {
			tasks = append(tasks, table.FileScanTask{File: df, Length: df.FileSizeBytes()})
		}
		res.FilesPlanned = len(tasks)
		sc, batches, err = scan.ReadTasks(ctx, tasks)
		return err
	})
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s: scan", t))
	}
	// The reader pulls lazily from the iterator, in the requested column
	// order (iceberg-go answers in table order) and without the anchor.
	res.Reader = newIterReader(sc, batches)
	if order := columnOrder(sc, req.Columns, anchor); order != nil {
		res.Reader.(*iterReader).reorder(order)
	}
	return res, nil
}

// columnOrder returns the indices in sc of the columns the reader returns:
// each requested column once, in the requested order, without the anchor
// column the scan added. It is nil when sc is already that projection.
func columnOrder(sc *arrow.Schema, cols []string, anchor string) []int {
	if cols == nil || sc == nil {
		return nil
	}
	order := make([]int, 0, len(cols))
	seen := make(map[int]bool, len(cols))
	for _, c := range cols {
		idx := sc.FieldIndices(c)
		if len(idx) != 1 {
			// Not a top-level name of sc (a nested path): keep iceberg-go's
			// columns, less the anchor.
			return without(sc, anchor)
		}
		if !seen[idx[0]] {
			seen[idx[0]] = true
			order = append(order, idx[0])
		}
	}
	if len(order) == sc.NumFields() {
		same := true
		for i, j := range order {
			same = same && i == j
		}
		if same {
			return nil
		}
	}
	return order
}

// without returns the indices of sc's fields other than name, or nil when
// name is "" or not in sc.
func without(sc *arrow.Schema, name string) []int {
	if name == "" || !sc.HasField(name) {
		return nil
	}
	order := []int{}
	for i, f := range sc.Fields() {
		if f.Name != name {
			order = append(order, i)
		}
	}
	return order
}

// filterExpr converts the pushed-down filters into one Iceberg expression.
func filterExpr(sc *ice.Schema, filters []catalogs.Filter) (ice.BooleanExpression, error) {
	var out ice.BooleanExpression = ice.AlwaysTrue{}
	for _, f := range filters {
		e, err := filterOne(sc, f)
		if err != nil {
			return nil, err
		}
		out = ice.NewAnd(out, e)
	}
	return out, nil
}

func filterOne(sc *ice.Schema, f catalogs.Filter) (ice.BooleanExpression, error) {
	bad := func(format string, args ...any) error {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "filter on column %q: "+format, append([]any{f.Column}, args...)...)
	}
	field, ok := sc.FindFieldByName(f.Column)
	if !ok {
		return nil, bad("no such column")
	}
	ref := ice.Reference(f.Column)
	switch f.Op {
	case catalogs.OpIsNull:
		return ice.IsNull(ref), nil
	case catalogs.OpNotNull:
		return ice.NotNull(ref), nil
	}
	lits := make([]ice.Literal, 0, len(f.Values))
	for _, v := range f.Values {
		l, err := literal(field.Type, v)
		if err != nil {
			return nil, bad("%v", err)
		}
		lits = append(lits, l)
	}
	if f.Op == catalogs.OpIn {
		if len(lits) == 0 {
			return ice.AlwaysFalse{}, nil
		}
		return ice.SetPredicate(ice.OpIn, ref, lits), nil
	}
	if len(lits) != 1 {
		return nil, bad("operator %s takes one value, got %d", f.Op, len(lits))
	}
	ops := map[catalogs.FilterOp]ice.Operation{
		catalogs.OpEq: ice.OpEQ, catalogs.OpNotEq: ice.OpNEQ, catalogs.OpLt: ice.OpLT,
		catalogs.OpLtEq: ice.OpLTEQ, catalogs.OpGt: ice.OpGT, catalogs.OpGtEq: ice.OpGTEQ,
	}
	op, ok := ops[f.Op]
	if !ok {
		return nil, bad("unknown operator %q", f.Op)
	}
	return ice.LiteralPredicate(op, ref, lits[0]), nil
}

// literal turns a Go filter value into an Iceberg literal of the column's
// type.
func literal(typ ice.Type, v any) (ice.Literal, error) {
	var l ice.Literal
	switch x := v.(type) {
	case bool:
		l = ice.NewLiteral(x)
	case int32:
		l = ice.NewLiteral(x)
	case int64:
		l = ice.NewLiteral(x)
	case int:
		l = ice.NewLiteral(int64(x))
	case float32:
		l = ice.NewLiteral(x)
	case float64:
		l = ice.NewLiteral(x)
	case string:
		l = ice.NewLiteral(x)
	case []byte:
		l = ice.NewLiteral(x)
	case time.Time:
		switch typ.(type) {
		case ice.DateType:
			return ice.NewLiteral(ice.Date(x.UTC().Unix() / 86400)), nil
		default:
			l = ice.NewLiteral(ice.Timestamp(x.UnixMicro()))
		}
	default:
		return nil, fmt.Errorf("unsupported value type %T", v)
	}
	var out ice.Literal
	err := protect(catalogs.ErrInvalidArgument, "literal", func() (err error) {
		out, err = l.To(typ)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("value %v does not convert to %s: %w", v, typ, err)
	}
	return out, nil
}

// iterReader is an array.RecordReader over a pull iterator of batches.
type iterReader struct {
	refs   int64
	schema *arrow.Schema
	next   func() (arrow.RecordBatch, error, bool)
	stop   func()
	cur    arrow.RecordBatch
	err    error
	order  []int // column permutation applied to every batch, nil for none
}

// reorder makes the reader return columns in the given order of the
// iterator's schema.
func (r *iterReader) reorder(order []int) {
	fields := make([]arrow.Field, len(order))
	for i, j := range order {
		fields[i] = r.schema.Field(j)
	}
	md := r.schema.Metadata()
	r.schema, r.order = arrow.NewSchema(fields, &md), order
}

func newIterReader(sc *arrow.Schema, seq func(func(arrow.RecordBatch, error) bool)) *iterReader {
	next, stop := iter.Pull2(iter.Seq2[arrow.RecordBatch, error](seq))
	return &iterReader{refs: 1, schema: sc, next: next, stop: stop}
}

var _ array.RecordReader = (*iterReader)(nil)

func (r *iterReader) Retain() { r.refs++ }

func (r *iterReader) Release() {
	r.refs--
	if r.refs == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		r.stop()
	}
}

func (r *iterReader) Schema() *arrow.Schema { return r.schema }

func (r *iterReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	rec, err, ok := r.pull()
	if !ok {
		return false
	}
	if err != nil {
		r.err = mapErr(err, "scan")
		return false
	}
	if r.order != nil {
		cols := make([]arrow.Array, len(r.order))
		for i, j := range r.order {
			cols[i] = rec.Column(j)
		}
		permuted := array.NewRecordBatch(r.schema, cols, rec.NumRows())
		rec.Release()
		rec = permuted
	}
	r.cur = rec
	return true
}

// pull takes the next batch, turning a panic in the scan into an error.
func (r *iterReader) pull() (rec arrow.RecordBatch, err error, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			rec, err, ok = nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "scan: %v", p), true
		}
	}()
	return r.next()
}

func (r *iterReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated name of RecordBatch.
func (r *iterReader) Record() arrow.RecordBatch { return r.cur }

func (r *iterReader) Err() error { return r.err }
