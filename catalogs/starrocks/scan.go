package starrocks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// scanBatchRows is the number of rows per scanned batch.
const scanBatchRows = 4096

// Scan implements catalogs.Scanner: a SELECT of the columns with the
// filters as its WHERE clause, sent over the MySQL protocol and read
// back as Arrow batches while the rows stream in.
func (p *Provider) Scan(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	if req.SnapshotID != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: catalog %q has no snapshots", t, p.name)
	}
	db, cols, err := p.columns(ctx, t)
	if err != nil {
		return nil, err
	}
	byName := map[string]column{}
	for _, c := range cols {
		byName[c.name] = c
	}
	names := req.Columns
	if names == nil {
		for _, c := range cols {
			names = append(names, c.name)
		}
	}
	fields := make([]arrow.Field, len(names))
	quoted := make([]string, len(names))
	for i, n := range names {
		c, ok := byName[n]
		if !ok {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", t, n)
		}
		fields[i] = arrow.Field{Name: c.name, Type: c.arrowType(), Nullable: c.nullable}
		quoted[i] = quote(c.name)
	}
	q := "SELECT " + strings.Join(quoted, ", ") + " FROM " + quote(db) + "." + quote(t.Name)
	where, args, err := whereClause(t, byName, req.Filters)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		q = "SELECT 1 FROM " + quote(db) + "." + quote(t.Name)
	}
	rows, err := p.db.QueryContext(ctx, q+where, args...)
	if err != nil {
		return nil, p.sqlError(t, "scan", err)
	}
	r := &rowReader{t: t, rows: rows, schema: arrow.NewSchema(fields, nil)}
	r.refs.Store(1)
	return &catalogs.ScanResult{Reader: r}, nil
}

// PushQuery implements catalogs.QueryPusher: the query, its tables
// written as StarRocks' `database`.`table`, sent over the MySQL protocol;
// the rows are read back as Arrow batches of q.Schema while they stream
// in, each column converted from its text as Scan converts it.
func (p *Provider) PushQuery(ctx context.Context, q catalogs.PushedQuery) (array.RecordReader, error) {
	if len(q.Tables) == 0 || q.Schema == nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: a pushed query needs its tables and result schema", p.name)
	}
	first := q.Tables[0]
	text, err := q.Render(func(t catalogs.TableIdent) (string, error) {
		if t.Catalog != p.name {
			return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s is not in catalog %q", t, p.name)
		}
		db, err := p.cfg.database(t)
		return quote(db) + "." + quote(t.Name), err
	})
	if err != nil {
		return nil, err
	}
	rows, err := p.db.QueryContext(ctx, text)
	if err != nil {
		return nil, p.sqlError(first, "query", err)
	}
	cols, err := rows.Columns()
	if err == nil && len(cols) != q.Schema.NumFields() {
		err = catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: starrocks answered the query with %d columns, the engine expects %d", first, len(cols), q.Schema.NumFields())
	}
	if err != nil {
		_ = rows.Close()
		return nil, err
	}
	p.log.Debug("query pushed down", "tables", len(q.Tables), "table", first.String())
	r := &rowReader{t: first, rows: rows, schema: q.Schema}
	r.refs.Store(1)
	return r, nil
}

// whereClause renders the filters the backend can express.
func whereClause(t catalogs.TableIdent, cols map[string]column, fs []catalogs.Filter) (string, []any, error) {
	var parts []string
	var args []any
	for _, f := range fs {
		if _, ok := cols[f.Column]; !ok {
			return "", nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: filter column %q is not in the table", t, f.Column)
		}
		c := quote(f.Column)
		switch f.Op {
		case catalogs.OpIsNull:
			parts = append(parts, c+" IS NULL")
		case catalogs.OpNotNull:
			parts = append(parts, c+" IS NOT NULL")
		case catalogs.OpIn:
			if len(f.Values) == 0 {
				parts = append(parts, "FALSE")
				continue
			}
			parts = append(parts, c+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(f.Values)), ", ")+")")
			for _, v := range f.Values {
				args = append(args, sqlValue(v))
			}
		case catalogs.OpEq, catalogs.OpNotEq, catalogs.OpLt, catalogs.OpLtEq, catalogs.OpGt, catalogs.OpGtEq:
			if len(f.Values) != 1 {
				continue
			}
			op := string(f.Op)
			if f.Op == catalogs.OpNotEq {
				op = "<>"
			}
			parts = append(parts, c+" "+op+" ?")
			args = append(args, sqlValue(f.Values[0]))
		}
	}
	if len(parts) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(parts, " AND "), args, nil
}

// sqlValue renders a filter value for the driver.
func sqlValue(v any) any {
	if tm, ok := v.(time.Time); ok {
		return tm.UTC().Format("2006-01-02 15:04:05.999999")
	}
	return v
}

// rowReader is an array.RecordReader over SQL rows.
type rowReader struct {
	t      catalogs.TableIdent
	rows   *sql.Rows
	schema *arrow.Schema
	cur    arrow.RecordBatch
	err    error
	done   bool
	refs   atomic.Int64
}

var _ array.RecordReader = (*rowReader)(nil)

func (r *rowReader) Retain() { r.refs.Add(1) }

func (r *rowReader) Release() {
	if r.refs.Add(-1) == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		_ = r.rows.Close()
	}
}

func (r *rowReader) Schema() *arrow.Schema          { return r.schema }
func (r *rowReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record implements array.RecordReader.
//
// Deprecated: use RecordBatch.
func (r *rowReader) Record() arrow.RecordBatch { return r.cur }
func (r *rowReader) Err() error                { return r.err }

func (r *rowReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done {
		return false
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, r.schema)
	defer b.Release()
	dest := make([]any, r.schema.NumFields())
	holders := make([]sql.NullString, len(dest))
	for i := range dest {
		dest[i] = &holders[i]
	}
	n := 0
	for n < scanBatchRows && r.rows.Next() {
		if err := r.rows.Scan(dest...); err != nil {
			r.err, r.done = catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: scan", r.t)), true
			return false
		}
		for i, h := range holders {
			if err := appendText(b.Field(i), h); err != nil {
				r.err, r.done = catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: column %q: %v", r.t, r.schema.Field(i).Name, err), true
				return false
			}
		}
		n++
	}
	if n < scanBatchRows {
		r.done = true
		if err := r.rows.Err(); err != nil {
			r.err = catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: scan", r.t))
			return false
		}
	}
	if n == 0 {
		return false
	}
	r.cur = b.NewRecordBatch()
	return true
}

// appendText appends a value the MySQL protocol sent as text.
func appendText(b array.Builder, v sql.NullString) error {
	if !v.Valid {
		b.AppendNull()
		return nil
	}
	s := v.String
	switch bb := b.(type) {
	case *array.StringBuilder:
		bb.Append(s)
	case *array.BinaryBuilder:
		bb.Append([]byte(s))
	case *array.Decimal128Builder:
		t := bb.Type().(*arrow.Decimal128Type)
		n, err := decimal128.FromString(s, t.Precision, t.Scale)
		if err != nil {
			return err
		}
		bb.Append(n)
	case *array.BooleanBuilder:
		bb.Append(s == "1" || strings.EqualFold(s, "true"))
	case *array.Date32Builder:
		tm, err := time.Parse(time.DateOnly, s[:min(len(s), 10)])
		if err != nil {
			return err
		}
		bb.Append(arrow.Date32FromTime(tm))
	case *array.TimestampBuilder:
		tm, err := parseDatetime(s)
		if err != nil {
			return err
		}
		bb.Append(arrow.Timestamp(tm.UnixMicro()))
	default:
		return b.AppendValueFromString(s)
	}
	return nil
}

// parseDatetime reads a DATETIME the driver sent (as text, or as RFC 3339
// with parseTime).
func parseDatetime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999", time.RFC3339Nano, time.DateOnly} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a datetime", s)
}
