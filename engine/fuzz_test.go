//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// hostileSeeds are the attacks of issue 9 and their neighbours.
var hostileSeeds = []string{
	`SELECT * FROM (WITH v AS (SELECT 1) SELECT 1) q, v`,
	`SHOW ALL TABLES`,
	`DESCRIBE sales`,
	`SUMMARIZE sales`,
	`SELECT * FROM (DESCRIBE sales), sales`,
	`WITH "x.parquet" AS (SELECT 1) SELECT * FROM "x.parquet"`,
	`SELECT * FROM (WITH pg_settings AS (SELECT 1) SELECT 1) q, pg_settings`,
	`SELECT * FROM (WITH duckdb_databases AS (SELECT 1) SELECT 1) q, duckdb_databases`,
	`SELECT * FROM (WITH sqlite_master AS (SELECT 1) SELECT 1) q, sqlite_master`,
	`SELECT * FROM information_schema.tables`,
	`SELECT pg_get_viewdef(1)`,
	`SELECT 1; ATTACH ':memory:' AS m`,
	`SELECT length(repeat('x', 1000000000))`,
	`SELECT len(range(1000000000))`,
	`WITH a AS (SELECT * FROM sales) SELECT count(*) FROM a, (WITH b AS (SELECT 1) SELECT * FROM b) c`,
	`SELECT region, sum(amount) FROM sales GROUP BY region`,
}

// Fragments the grammar of FuzzStatement draws from: allowed and refused.
var (
	fuzzFrom = []string{"sales", "regions", "lake.default.sales", "v", "w", "pg_settings", "duckdb_databases",
		"sqlite_master", "information_schema.tables", "pg_catalog.pg_class", "system.main.duckdb_views",
		"temp.main.t", "range(3) r(i)", "read_parquet('/etc/passwd')", "duckdb_tables()", "'/etc/passwd'",
		"(SELECT 1 AS a) s", "(DESCRIBE sales)", "(SHOW ALL TABLES)", "(WITH v AS (SELECT 1 AS a) SELECT a FROM v) q",
		"__flightgw_0000000000000000_0", `"x.parquet"`}
	fuzzExpr = []string{"*", "1", "count(*)", "id", "region", "repeat('x', 100000000)", "repeat(region, 3)",
		"lpad('a', 1000000000, 'b')", "len(range(100000000))", "pg_get_viewdef(0)", "current_setting('memory_limit')",
		"(SELECT count(*) FROM v)", "repeat('x', (random() * 1e9)::INT)", "json_serialize_sql('SELECT 1')"}
	fuzzWrap = []string{"%s", "WITH v AS (SELECT 1 AS a) %s", "WITH v AS (%s) SELECT * FROM v",
		"SELECT * FROM (%s) x", "%s; ATTACH 'x'", "%s; %s", "DESCRIBE %s", "SUMMARIZE %s", "%s UNION ALL %s",
		"WITH w AS (SELECT 1 AS a) SELECT * FROM (%s) x, w", "SELECT * FROM (WITH w AS (SELECT 1) SELECT 1) y, (%s) x"}
)

// buildStatement draws a statement from the fragments, steered by b.
func buildStatement(b []byte) string {
	pick := func(list []string) string {
		if len(b) == 0 {
			return list[0]
		}
		v := list[int(b[0])%len(list)]
		b = b[1:]
		return v
	}
	inner := "SELECT " + pick(fuzzExpr) + " FROM " + pick(fuzzFrom)
	if len(b) > 0 && b[0]%2 == 1 {
		inner += " WHERE id = " + pick([]string{"1", "'x'", "(SELECT 1 FROM pg_settings)", "NULL"})
	}
	wrap := pick(fuzzWrap)
	return strings.ReplaceAll(wrap, "%s", inner)
}

// classified reports whether err is one of the engine's kinds, which the
// gateway maps to a status other than Internal or Unavailable.
func classified(err error) bool {
	for _, k := range []error{catalogs.ErrInvalidArgument, catalogs.ErrNotFound, catalogs.ErrPermissionDenied,
		catalogs.ErrFailedPrecondition, ErrUnsupported, ErrResourceExhausted, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// runHostile runs q to the end under a short timeout and checks the
// engine's invariants: any error is classified, and no view of the query
// is left for another connection to see.
func runHostile(t *testing.T, f *fixture, q string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := f.eng.Query(ctx, q, nil, f.resolve)
	if err == nil {
		for r.Next() {
		}
		err = r.Err()
		r.Close()
	}
	if err != nil && !classified(err) {
		t.Errorf("%s: unclassified error %v", q, err)
	}
	if n := userViews(t, f.eng); n != 0 {
		t.Fatalf("%s: %d views left in the shared catalog", q, n)
	}
}

// TestHostileSeeds runs the fuzz target's seed corpus in plain go test.
func TestHostileSeeds(t *testing.T) {
	f := newFixture(t)
	for _, q := range hostileSeeds {
		runHostile(t, f, q)
	}
	for i := range 64 {
		runHostile(t, f, buildStatement([]byte{byte(i), byte(i * 7), byte(i * 13), byte(i * 3), byte(i * 5), byte(i * 11)}))
	}
}

// FuzzStatement runs statements built from the allowed and refused
// grammar (and the raw input) against a real engine:
// go test -tags duckdb_arrow ./engine -run '^$' -fuzz FuzzStatement -fuzztime 60s
func FuzzStatement(f *testing.F) {
	for i, q := range hostileSeeds {
		f.Add(q, []byte{byte(i), byte(i * 7), byte(i * 13)})
	}
	var fx *fixture
	f.Fuzz(func(t *testing.T, raw string, steer []byte) {
		if fx == nil {
			fx = newFixture(&testing.T{})
		}
		runHostile(t, fx, raw)
		runHostile(t, fx, buildStatement(steer))
	})
}
