//go:build duckdb_arrow

package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestResultNamesHidePrivateViews: a column named after an expression that
// holds a table reference (a scalar subquery, EXISTS, IN) shows the table
// as the query wrote it, never the private view it runs over.
func TestResultNamesHidePrivateViews(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ q, want string }{
		{`SELECT (SELECT max(id) FROM sales)`, `(SELECT max(id) FROM sales)`},
		{`SELECT (SELECT max(s.id) FROM sales AS s) AS m, (SELECT count(*) FROM lake."default".regions)`, `m,(SELECT count_star() FROM lake."default".regions)`},
		{`SELECT EXISTS (SELECT 1 FROM regions r WHERE r.region = 'eu')`, `EXISTS(SELECT 1 FROM regions AS r WHERE (r.region = 'eu'))`},
		{`SELECT id IN (SELECT qty FROM sales) FROM sales ORDER BY id LIMIT 1`, `(id = ANY(SELECT qty FROM sales))`},
	}
	for _, c := range cases {
		d, err := f.eng.Describe(context.Background(), c.q, f.resolve)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		r, err := f.eng.Query(context.Background(), c.q, nil, f.resolve)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		for r.Next() {
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		for _, s := range []string{names(d.Schema.Fields()), names(r.Schema().Fields()), names(r.Schema().Fields())} {
			if s != c.want {
				t.Errorf("%s: columns %q, want %q", c.q, s, c.want)
			}
		}
		r.Close()
	}
}

func names(fields []arrow.Field) string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return strings.Join(out, ",")
}
