//go:build duckdb_arrow

package engine

import (
	"context"
	"strings"
	"testing"
)

// TestOrigins: a result column that shows a table column as it is stored
// has that column as its origin, through aliases, joins, subqueries and
// CTEs; a computed one, or one the tree cannot place, has none. Describe
// and Query agree.
func TestOrigins(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ q, want string }{
		{`SELECT id, region FROM sales`, `sales.id,sales.region`},
		{`SELECT * FROM regions`, `regions.region,regions.manager`},
		{`FROM regions`, `regions.region,regions.manager`},
		{`SELECT s.id AS k, amount * 2 AS a2, upper(s.region), r.manager FROM sales s JOIN regions r ON s.region = r.region`,
			`sales.id,-,-,regions.manager`},
		{`SELECT r.*, s.qty FROM lake."default".regions r, sales s`, `regions.region,regions.manager,sales.qty`},
		// region is in both tables: the unqualified name is not placed.
		{`SELECT s.region, manager FROM sales s JOIN regions USING (region)`, `sales.region,regions.manager`},
		{`SELECT * FROM sales s JOIN regions USING (region)`, ``},
		{`SELECT x.k, x.n FROM (SELECT id AS k, count(*) AS n FROM sales GROUP BY id) x`, `sales.id,-`},
		{`SELECT b FROM (SELECT manager FROM regions) AS t(b)`, `regions.manager`},
		{`WITH c AS (SELECT manager AS m FROM regions), d AS (SELECT m FROM c) SELECT d.m, 1 FROM d`, `regions.manager,-`},
		{`SELECT region, sum(qty) FROM sales GROUP BY region ORDER BY region`, `sales.region,-`},
		{`SELECT id FROM sales UNION ALL SELECT qty FROM sales`, ``},
		{`SELECT * EXCLUDE (id) FROM sales`, ``},
		{`SELECT 1 AS one, 'x'`, `-,-`},
		{`SELECT id, (SELECT max(manager) FROM regions) FROM sales`, `sales.id,-`},
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
		got := []string{renderOrigins(d.Origins), renderOrigins(r.Origins())}
		r.Close()
		for _, g := range got {
			if g != c.want {
				t.Errorf("%s: origins %q, want %q", c.q, g, c.want)
			}
		}
	}
}

func renderOrigins(os []Origin) string {
	var parts []string
	for _, o := range os {
		if !o.Known() {
			parts = append(parts, "-")
			continue
		}
		if o.Table.Catalog != "lake" || strings.Join(o.Table.Namespace, ".") != "default" {
			parts = append(parts, "?"+o.Table.String())
			continue
		}
		parts = append(parts, o.Table.Name+"."+o.Column)
	}
	return strings.Join(parts, ",")
}
