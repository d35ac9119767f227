package flightsql

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/flightgw/flightgw/catalogs"
)

// Scan implements catalogs.Scanner: a SELECT of the columns, with the
// filters whose literals every SQL dialect writes alike (integers,
// finite floats, booleans, strings) as its WHERE clause; the others are
// left to the engine, which filters again anyway. The request's limit is
// the SELECT's LIMIT when every filter is in its WHERE. The result is
// cast to the table's normalized schema.
func (p *Provider) Scan(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	if req.SnapshotID != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: catalog %q has no snapshots", t, p.name)
	}
	spec, err := p.GetTableSpec(ctx, t)
	if err != nil {
		return nil, err
	}
	name, err := p.upstreamName(ctx, t)
	if err != nil {
		return nil, err
	}
	c, _ := p.cachedCaps()
	// The table's metadata was read with the catalog's credential, its
	// rows are read with the caller's when it is forwarded.
	if ctx, err = p.asCaller(ctx); err != nil {
		return nil, err
	}
	names := req.Columns
	if names == nil {
		for _, f := range spec.Schema.Fields() {
			names = append(names, f.Name)
		}
	}
	fields := make([]arrow.Field, len(names))
	quoted := make([]string, len(names))
	for i, n := range names {
		idx := spec.Schema.FieldIndices(n)
		if len(idx) == 0 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", t, n)
		}
		fields[i] = spec.Schema.Field(idx[0])
		quoted[i] = quoteIdent(c.quote, n)
	}
	list := strings.Join(quoted, ", ")
	if len(names) == 0 {
		// A count: one column the engine does not look at.
		list = "1 AS " + quoteIdent(c.quote, "one")
	}
	where, all := whereClause(spec.Schema, c.quote, req.Filters)
	q := "SELECT " + list + " FROM " + name + where
	if req.Limit > 0 && all {
		// Only when the rows the upstream keeps all pass the engine's
		// WHERE: else fewer than the limit could be left.
		q += " LIMIT " + strconv.FormatInt(req.Limit, 10)
	}
	r, err := p.query(ctx, "scan table "+t.String(), func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, q)
	})
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return &catalogs.ScanResult{Reader: r}, nil
	}
	cr, err := castTo(r, arrow.NewSchema(fields, nil), "table "+t.String())
	if err != nil {
		return nil, err
	}
	return &catalogs.ScanResult{Reader: cr}, nil
}

// whereClause renders the filters it can write portably; all tells
// whether the upstream keeps only rows that pass every filter as the
// engine reads it: each is written, and none compares strings (an
// upstream's collation may fold case or trailing spaces, and keep rows
// the engine then drops).
func whereClause(s *arrow.Schema, quote string, fs []catalogs.Filter) (clause string, all bool) {
	var parts []string
	all = true
	for _, f := range fs {
		c, ok := filterClause(s, quote, f)
		if !ok {
			all = false
			continue
		}
		if t := s.Field(s.FieldIndices(f.Column)[0]).Type; !isDecimal(t) {
			for _, v := range f.Values {
				if _, str := v.(string); str {
					all = false
				}
			}
		}
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return "", all
	}
	return " WHERE " + strings.Join(parts, " AND "), all
}

// filterClause writes one filter as portable SQL; ok is false when it
// cannot.
func filterClause(s *arrow.Schema, quote string, f catalogs.Filter) (string, bool) {
	idx := s.FieldIndices(f.Column)
	if len(idx) == 0 {
		return "", false
	}
	typ := s.Field(idx[0]).Type
	col := quoteIdent(quote, f.Column)
	switch f.Op {
	case catalogs.OpIsNull:
		return col + " IS NULL", true
	case catalogs.OpNotNull:
		return col + " IS NOT NULL", true
	case catalogs.OpIn:
		if len(f.Values) == 0 {
			return "", false
		}
		lits := make([]string, len(f.Values))
		for i, v := range f.Values {
			l, ok := literal(v, typ)
			if !ok {
				return "", false
			}
			lits[i] = l
		}
		return col + " IN (" + strings.Join(lits, ", ") + ")", true
	case catalogs.OpEq, catalogs.OpNotEq, catalogs.OpLt, catalogs.OpLtEq, catalogs.OpGt, catalogs.OpGtEq:
		if len(f.Values) != 1 {
			return "", false
		}
		l, ok := literal(f.Values[0], typ)
		if !ok {
			return "", false
		}
		op := string(f.Op)
		if f.Op == catalogs.OpNotEq {
			op = "<>"
		}
		return col + " " + op + " " + l, true
	}
	return "", false
}

// literal writes a filter value, compared with a column of type t, as
// portable SQL; ok is false for a value whose spelling differs between
// dialects (dates, timestamps, bytes), which is then not pushed.
func literal(v any, t arrow.DataType) (string, bool) {
	if x, ok := v.(string); ok && isDecimal(t) {
		return decimalLit(x, t)
	}
	switch x := v.(type) {
	case bool:
		if x {
			return "TRUE", true
		}
		return "FALSE", true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float32:
		return floatLit(float64(x))
	case float64:
		return floatLit(x)
	case string:
		if strings.ContainsAny(x, "\\\x00") {
			return "", false // a backslash is an escape in some dialects
		}
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", true
	}
	return "", false
}

func isDecimal(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// maxExactDigits is the most significant digits a decimal comparison is
// pushed with: a dialect may read the numeric literal 1.5 as a double
// (DataFusion does, DuckDB and Spark read a decimal) and compare the
// column as doubles too, which is exact only while both sides have at
// most 15 significant digits (a double holds them all, in order).
const maxExactDigits = 15

// decimalLit writes a decimal filter value (the engine gives it as
// text, "-12.50") as a bare numeric literal, not the quoted string an
// upstream would compare as text or refuse. It is not pushed when the
// column or the value has more digits than a double holds exactly, nor
// when the text is not a plain decimal numeral.
func decimalLit(x string, t arrow.DataType) (string, bool) {
	if p, ok := t.(arrow.DecimalType); !ok || p.GetPrecision() > maxExactDigits {
		return "", false
	}
	digits := strings.TrimPrefix(x, "-")
	whole, frac, _ := strings.Cut(digits, ".")
	if whole == "" || (strings.Contains(digits, ".") && frac == "") {
		return "", false
	}
	for _, r := range whole + frac {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	if len(strings.TrimLeft(whole+frac, "0")) > maxExactDigits {
		return "", false
	}
	return x, true
}

func floatLit(f float64) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// PushQuery implements catalogs.QueryPusher: the query's text with each
// table reference written as the upstream names it (its catalog, schema
// and table, in its quoting), sent whole; the result is cast to the
// engine's schema by position. For a caller that takes relayed batches
// (catalogs.WithRelay), the upstream's record batches whose column types
// are the planned ones are handed on as received (flightframe.Batch).
func (p *Provider) PushQuery(ctx context.Context, q catalogs.PushedQuery) (array.RecordReader, error) {
	if len(q.Tables) == 0 || q.Schema == nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: a pushed query needs its tables and result schema", p.name)
	}
	c, err := p.capabilities(ctx)
	if err != nil {
		return nil, err
	}
	if !c.sql {
		return nil, p.lacks(c, "SQL queries", &q.Tables[0])
	}
	text, err := q.Render(func(t catalogs.TableIdent) (string, error) { return p.upstreamName(ctx, t) })
	if err != nil {
		return nil, err
	}
	if ctx, err = p.asCaller(ctx); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("query of table %s", q.Tables[0])
	r, err := p.read(ctx, what, func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, text)
	}, catalogs.Relay(ctx))
	if err != nil {
		return nil, err
	}
	p.log.Debug("query pushed down", "tables", len(q.Tables), "table", q.Tables[0].String())
	return castTo(r, q.Schema, what)
}
