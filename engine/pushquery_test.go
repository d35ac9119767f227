//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
)

// pushScanner is a memScanner whose backend also runs whole queries: it
// records each one, rendered with its tables as remote.<name>, and
// answers with no rows (or the error fail).
type pushScanner struct {
	*memScanner
	pushed  []string
	schemas []*arrow.Schema
	fail    error
}

func (s *pushScanner) PushQuery(_ context.Context, q catalogs.PushedQuery) (array.RecordReader, error) {
	text, err := q.Render(func(t catalogs.TableIdent) (string, error) { return "remote." + t.Name, nil })
	if err != nil {
		return nil, err
	}
	s.pushed = append(s.pushed, text)
	s.schemas = append(s.schemas, q.Schema)
	if s.fail != nil {
		return nil, s.fail
	}
	return array.NewRecordReader(q.Schema, nil)
}

func TestPushQuery(t *testing.T) {
	f := newFixture(t)
	ps := &pushScanner{memScanner: f.scan}
	resolve := func(cat, sch, name string) (Table, error) {
		tb, err := f.resolve(cat, sch, name)
		tb.Scanner = ps
		return tb, err
	}
	join := `SELECT r.manager, count(*) AS n, sum(s.qty) AS q FROM lake.default.sales s JOIN "regions" r ON r.region = s.region WHERE s.amount > 1 GROUP BY r.manager`
	cases := []struct {
		q, pushed string // pushed "" : the engine runs it
	}{
		{join, `SELECT r.manager, count(*) AS n, sum(s.qty) AS q FROM remote.sales s JOIN remote.regions r ON r.region = s.region WHERE s.amount > 1 GROUP BY r.manager`},
		{`select id from sales where region in ('eu', 'it''s') limit 2`, `select id from remote.sales where region in ('eu', 'it''s') limit 2`},
		{`SELECT id FROM sales ORDER BY id`, ""},                          // NULL order differs
		{`SELECT id AS "x" FROM sales`, ""},                               // a string to MySQL
		{`SELECT id FROM sales WHERE region = 'a\b'`, ""},                 // an escape to MySQL
		{`SELECT id::VARCHAR FROM sales`, ""},                             // a cast
		{`SELECT id / 2 FROM sales`, ""},                                  // typed otherwise
		{`SELECT region || 'x' FROM sales`, ""},                           // OR to MySQL
		{`SELECT id FROM sales -- c`, ""},                                 // a comment
		{`WITH x AS (SELECT id FROM sales) SELECT id FROM x`, ""},         // a CTE
		{`SELECT * EXCLUDE (qty) FROM sales`, ""},                         // DuckDB's star
		{`SELECT region, count(*) FROM sales GROUP BY ALL`, ""},           // DuckDB's GROUP BY ALL
		{`SELECT id FROM sales UNION SELECT 1`, ""},                       // a set operation
		{`SELECT string_agg(region, ',') FROM sales`, ""},                 // another function
		{`SELECT id FROM (SELECT id FROM sales)`, ""},                     // a subquery without an alias
		{`SELECT id FROM sales s FULL JOIN regions r USING (region)`, ""}, // no FULL JOIN in MySQL
	}
	for _, c := range cases {
		ps.pushed = nil
		r, err := f.eng.Query(context.Background(), c.q, nil, resolve)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		for r.Next() {
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		pushed := len(r.Scans()) > 0 && r.Scans()[0].Pushed
		r.Close()
		switch {
		case c.pushed == "" && (len(ps.pushed) > 0 || pushed):
			t.Errorf("%s: pushed as %q, want it run by the engine", c.q, ps.pushed)
		case c.pushed != "" && (len(ps.pushed) != 1 || ps.pushed[0] != c.pushed || !pushed):
			t.Errorf("%s: pushed %q, want %q", c.q, ps.pushed, c.pushed)
		}
	}
	// The result keeps the engine's typing: what Describe told the client.
	d, err := f.eng.Describe(context.Background(), join, resolve)
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.schemas[0]; !got.Equal(d.Schema) {
		t.Errorf("pushed schema %s, described %s", got, d.Schema)
	}
	// SQL the backend refuses is run by the engine, with the right rows.
	ps.fail = catalogs.Errorf(catalogs.ErrFailedPrecondition, "starrocks: syntax error")
	got, err := (&fixture{eng: f.eng, resolve: resolve}).rows(t, `SELECT count(*) FROM sales WHERE region = 'eu'`, nil)
	if err != nil || strings.Join(got, ",") != "2" {
		t.Errorf("fallback after a refused push: %v, %v; want 2", got, err)
	}
	// A backend that is down is an error, not a second run.
	ps.fail = catalogs.Errorf(catalogs.ErrUnavailable, "starrocks: connection refused")
	if _, err := (&fixture{eng: f.eng, resolve: resolve}).rows(t, `SELECT count(*) FROM sales`, nil); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("push to a backend that is down: %v", err)
	}
}

// TestQueryPushed: a described query that goes whole to its backend runs
// again from its Description.Pushed as Query would push it, its tables
// resolved again for the caller; ok is false when it is no longer the
// backend's to run.
func TestQueryPushed(t *testing.T) {
	f := newFixture(t)
	ps := &pushScanner{memScanner: f.scan}
	var staged bool
	resolve := func(cat, sch, name string) (Table, error) {
		tb, err := f.resolve(cat, sch, name)
		tb.Scanner = ps
		if staged {
			tb.Staged = &Staged{}
		}
		return tb, err
	}
	const q = `SELECT region, count(*) AS n FROM sales WHERE amount > 1 GROUP BY region`
	d, _, err := f.eng.DescribeSplit(context.Background(), q, resolve, SplitOptions{MaxParts: 4})
	if err != nil || d.Pushed == nil {
		t.Fatalf("describe %s: pushed %v, %v", q, d, err)
	}
	if !d.Pushed.Schema.Equal(d.Schema) {
		t.Fatalf("pushed schema %s, described %s", d.Pushed.Schema, d.Schema)
	}
	if d, err := f.eng.Describe(context.Background(), `SELECT id FROM sales ORDER BY id`, resolve); err != nil || d.Pushed != nil {
		t.Fatalf("a query with ORDER BY described as pushed: %+v %v", d, err)
	}
	run := func() (bool, error) {
		ps.pushed = nil
		r, ok, err := f.eng.QueryPushed(context.Background(), *d.Pushed, d.Origins, resolve)
		if !ok || err != nil {
			return ok, err
		}
		defer r.Close()
		for r.Next() {
		}
		if !r.Schema().Equal(d.Schema) || len(r.Scans()) != 1 || !r.Scans()[0].Pushed {
			t.Errorf("QueryPushed: schema %s scans %+v", r.Schema(), r.Scans())
		}
		return ok, r.Err()
	}
	if ok, err := run(); !ok || err != nil || len(ps.pushed) != 1 ||
		ps.pushed[0] != `SELECT region, count(*) AS n FROM remote.sales WHERE amount > 1 GROUP BY region` {
		t.Fatalf("QueryPushed: %v %v, pushed %q", ok, err, ps.pushed)
	}
	staged = true
	if ok, err := run(); ok || err != nil || len(ps.pushed) != 0 {
		t.Errorf("QueryPushed of a table with staged writes: %v %v, pushed %q; want the engine's", ok, err, ps.pushed)
	}
	staged = false
	ps.fail = catalogs.Errorf(catalogs.ErrFailedPrecondition, "starrocks: syntax error")
	if ok, err := run(); ok || err != nil {
		t.Errorf("QueryPushed refused by the backend: %v %v; want the engine's", ok, err)
	}
	ps.fail = nil
	hidden := func(cat, sch, name string) (Table, error) {
		return Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", name)
	}
	if _, ok, err := f.eng.QueryPushed(context.Background(), *d.Pushed, d.Origins, hidden); ok || !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("QueryPushed of a table the caller cannot see: %v %v", ok, err)
	}
}

// BenchmarkDescribePushed is GetFlightInfo's describe of a pushed query.
func BenchmarkDescribePushed(b *testing.B) {
	f := newFixture(b)
	ps := &pushScanner{memScanner: f.scan}
	resolve := func(cat, sch, name string) (Table, error) {
		tb, err := f.resolve(cat, sch, name)
		tb.Scanner = ps
		return tb, err
	}
	for b.Loop() {
		if _, _, err := f.eng.DescribeSplit(context.Background(), `SELECT count(*), sum(qty) FROM sales WHERE amount > 1`, resolve, SplitOptions{MaxParts: 4}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDescribeCache: the describe of a query pushed whole is DuckDB's
// once per statement text and column types: asked again it is not
// prepared again and shows the same public column names (not the
// private view names of the plan that prepared it); a table whose column
// types changed is described afresh, and a query the engine runs (not
// pushed) is prepared every time. Its tables are resolved every time.
func TestDescribeCache(t *testing.T) {
	f := newFixture(t)
	ps := &pushScanner{memScanner: f.scan}
	var resolved int
	wideQty := false
	resolve := func(cat, sch, name string) (Table, error) {
		resolved++
		tb, err := f.resolve(cat, sch, name)
		tb.Scanner = ps
		if wideQty && err == nil {
			fields := tb.Schema.Fields()
			for i := range fields {
				if fields[i].Name == "qty" {
					fields[i].Type = arrow.PrimitiveTypes.Float64
				}
			}
			tb.Schema = arrow.NewSchema(fields, nil)
		}
		return tb, err
	}
	prepares := 0
	debugPrepare = func() { prepares++ }
	defer func() { debugPrepare = nil }()
	describe := func(q string) *Description {
		t.Helper()
		d, _, err := f.eng.DescribeSplit(context.Background(), q, resolve, SplitOptions{MaxParts: 4})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const q = `SELECT count(*), max(qty) FROM sales WHERE amount > 1`
	first := describe(q)
	second := describe(q)
	if prepares != 1 || resolved != 2 {
		t.Fatalf("two describes of a pushed query: %d prepares, %d resolutions; want 1 and 2", prepares, resolved)
	}
	if first.Pushed == nil || second.Pushed == nil || !first.Schema.Equal(second.Schema) {
		t.Fatalf("described %s, then %s (pushed %v, %v)", first.Schema, second.Schema, first.Pushed != nil, second.Pushed != nil)
	}
	for _, fl := range second.Schema.Fields() {
		if strings.Contains(fl.Name, privatePrefix) {
			t.Errorf("column %q names a private view", fl.Name)
		}
	}
	wideQty = true
	if got := describe(q).Schema.Field(1).Type; prepares != 2 || got.ID() != arrow.FLOAT64 {
		t.Errorf("after qty became a double: max(qty) %s, %d prepares; want a double, 2", got, prepares)
	}
	for range 2 {
		describe(`SELECT id FROM sales ORDER BY id`) // the engine's to run
	}
	if prepares != 4 {
		t.Errorf("a query the engine runs: %d prepares in all, want 4", prepares)
	}
}
