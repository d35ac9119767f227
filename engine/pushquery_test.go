//go:build duckdb_arrow

package engine

import (
	"context"
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
