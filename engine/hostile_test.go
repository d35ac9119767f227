//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// userViews counts the views a query could have left in the engine's
// DuckDB, seen from a connection of its own.
func userViews(t *testing.T, e *Engine) int {
	t.Helper()
	c, err := e.connect()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	n, err := c.queryString(`SELECT count(*)::VARCHAR FROM duckdb_views() WHERE NOT internal AND $1 <> ''`, "x")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.Atoi(n)
	return v
}

// failingScanner fails every scan, after the query's other tables were
// registered.
type failingScanner struct{}

func (failingScanner) Scan(context.Context, catalogs.TableIdent, catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	return nil, catalogs.Errorf(catalogs.ErrUnavailable, "scan failed")
}

// TestNoViewOutlivesQuery: a stream-path query's views are gone from the
// shared catalog while it streams, once it ends, after an error and after
// a cancel, so no other connection can see or name them.
func TestNoViewOutlivesQuery(t *testing.T) {
	f := newFixture(t)
	r, err := f.eng.Query(context.Background(), `SELECT s.id FROM sales s JOIN regions r USING (region)`, nil, f.resolve)
	if err != nil {
		t.Fatal(err)
	}
	if n := userViews(t, f.eng); n != 0 {
		t.Errorf("%d views visible to another connection while a query streams", n)
	}
	for r.Next() {
	}
	r.Close()
	if n := userViews(t, f.eng); n != 0 {
		t.Errorf("%d views left after the query", n)
	}
	// An error after the first table was registered.
	failing := func(cat, sch, name string) (Table, error) {
		tb, err := f.resolve(cat, sch, name)
		if name == "regions" {
			tb.Scanner = failingScanner{}
		}
		return tb, err
	}
	if _, err := f.eng.Query(context.Background(), `SELECT * FROM sales, regions`, nil, failing); err == nil {
		t.Fatal("query over a failing scan succeeded")
	}
	if n := userViews(t, f.eng); n != 0 {
		t.Errorf("%d views left after a failed query", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, err = f.eng.Query(ctx, `SELECT s.id FROM sales s, range(100000000) t(i)`, nil, f.resolve)
	if err != nil {
		t.Fatal(err)
	}
	r.Next()
	cancel()
	for r.Next() {
	}
	r.Close()
	if n := userViews(t, f.eng); n != 0 {
		t.Errorf("%d views left after a cancelled query", n)
	}
}

// TestFreedStreamNotReachable: the attack of issue 9 named a finished
// query's view through an out-of-scope CTE name and read its freed Arrow
// stream, crashing the process. It runs in a child process, so that a
// crash fails the test instead of ending it.
func TestFreedStreamNotReachable(t *testing.T) {
	if os.Getenv("FLIGHTGW_FREED_STREAM_CHILD") == "1" {
		freedStreamChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFreedStreamNotReachable$", "-test.v")
	cmd.Env = append(os.Environ(), "FLIGHTGW_FREED_STREAM_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "attack refused:") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "attack succeeded") {
		t.Fatalf("another query's view was readable:\n%s", out)
	}
}

func freedStreamChild() {
	t := &testing.T{}
	f := newFixture(t)
	var view string
	re := regexp.MustCompile(`__flightgw_[0-9a-f]+_0`)
	debugSQL = func(_, _, sql string) {
		if view == "" {
			view = re.FindString(sql)
		}
	}
	if _, err := f.rows(t, `SELECT count(*) FROM sales`, nil); err != nil || view == "" {
		println("setup failed:", err, view)
		os.Exit(2)
	}
	debugSQL = nil
	q := `SELECT * FROM (WITH ` + view + ` AS (SELECT 1) SELECT 1) q, ` + view
	got, err := f.rows(t, q, nil)
	if err == nil {
		println("attack succeeded:", strings.Join(got, ","))
		os.Exit(1)
	}
	println("attack refused:", err.Error())
}

// TestHostileQueriesRefused: the catalog introspection of issue 9 is
// refused, naming what is refused, and several statements are refused
// as such.
func TestHostileQueriesRefused(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		q    string
		kind error
		msg  string
	}{
		{`SHOW ALL TABLES`, catalogs.ErrInvalidArgument, "SHOW is not supported"},
		{`SHOW TABLES`, catalogs.ErrInvalidArgument, "SHOW is not supported"},
		{`DESCRIBE sales`, catalogs.ErrInvalidArgument, "DESCRIBE is not supported"},
		{`SUMMARIZE sales`, catalogs.ErrInvalidArgument, "SUMMARIZE is not supported"},
		{`SELECT * FROM (DESCRIBE sales)`, catalogs.ErrInvalidArgument, "DESCRIBE is not supported"},
		{`SELECT * FROM (SUMMARIZE SELECT 1)`, catalogs.ErrInvalidArgument, "SUMMARIZE is not supported"},
		// Out of its scope a CTE name is a table name, resolved for the
		// caller.
		{`SELECT * FROM (WITH v AS (SELECT 1) SELECT 1) q, v`, catalogs.ErrNotFound, "v"},
		{`WITH a AS (SELECT 1) SELECT * FROM (WITH b AS (SELECT 1) SELECT 1) x, b`, catalogs.ErrNotFound, "b"},
		{`SELECT 1 UNION ALL (WITH w AS (SELECT 1) SELECT 1) UNION ALL SELECT * FROM w`, catalogs.ErrNotFound, "w"},
		{`WITH b AS (SELECT * FROM a), a AS (SELECT 1) SELECT * FROM b`, catalogs.ErrNotFound, "a"},
		{`SELECT * FROM (WITH pg_settings AS (SELECT 1) SELECT 1) q, pg_settings`, catalogs.ErrInvalidArgument, "pg_settings is reserved"},
		{`WITH __flightgw_0123456789abcdef_0 AS (SELECT 1) SELECT 1`, catalogs.ErrInvalidArgument, "reserved"},
		{`SELECT * FROM pg_settings`, catalogs.ErrPermissionDenied, "pg_settings"},
		{`SELECT * FROM duckdb_databases`, catalogs.ErrPermissionDenied, "duckdb_databases"},
		{`SELECT * FROM sqlite_master`, catalogs.ErrPermissionDenied, "sqlite_master"},
		{`SELECT * FROM sales WHERE id IN (SELECT 1 FROM duckdb_views)`, catalogs.ErrPermissionDenied, "duckdb_views"},
		{`SELECT * FROM information_schema.table_constraints`, catalogs.ErrPermissionDenied, "information_schema.table_constraints"},
		{`SELECT * FROM system.information_schema.tables`, catalogs.ErrPermissionDenied, "system.information_schema.tables"},
		{`SELECT * FROM pg_catalog.pg_class`, catalogs.ErrPermissionDenied, "pg_catalog.pg_class"},
		{`SELECT * FROM system.main.duckdb_tables`, catalogs.ErrPermissionDenied, "duckdb_tables"},
		{`SELECT * FROM temp.main.x`, catalogs.ErrPermissionDenied, "temp.main.x"},
		{`SELECT * FROM duckdb_tables()`, catalogs.ErrPermissionDenied, "duckdb_tables"},
		{`SELECT * FROM pragma_table_info('sales')`, catalogs.ErrPermissionDenied, "pragma_table_info"},
		{`SELECT pg_get_viewdef(1)`, catalogs.ErrPermissionDenied, "pg_get_viewdef"},
		{`SELECT 1; ATTACH 'x' AS x`, catalogs.ErrInvalidArgument, "multiple statements are not supported: SELECT; ATTACH"},
		{`SELECT 1; SELECT 2`, catalogs.ErrInvalidArgument, "multiple statements are not supported: SELECT; SELECT"},
		{`SELECT ';'; DROP TABLE sales -- ;`, catalogs.ErrInvalidArgument, "SELECT; DROP"},
		{`ATTACH 'x' AS x`, ErrUnsupported, "ATTACH statements are not supported"},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			_, err := f.rows(t, c.q, nil)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want kind %v naming %q", err, c.kind, c.msg)
			}
		})
	}
	// A CTE in scope still works, shadowing a table of the caller's.
	if got, err := f.rows(t, `WITH sales AS (SELECT 7 AS id) SELECT id FROM sales`, nil); err != nil || strings.Join(got, ",") != "7" {
		t.Fatalf("CTE in scope: %v %v", got, err)
	}
	if got, err := f.rows(t, `WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT (SELECT max(y) FROM b) FROM a`, nil); err != nil || strings.Join(got, ",") != "2" {
		t.Fatalf("nested CTEs: %v %v", got, err)
	}
}

// vmKB reads a field of /proc/self/status, in kB.
func vmKB(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestStringFunctionsBounded: repeat and its kin build values DuckDB's
// memory_limit does not count and cannot interrupt; under a 2 s timeout
// and a 512MB limit, `length(repeat('x', 1000000000))` took 11.5 s and
// 2 GB. They end fast with ResourceExhausted (or the deadline) and the
// process's peak RSS grows by less than 1 GB.
func TestStringFunctionsBounded(t *testing.T) {
	f := newFixture(t)
	before := vmKB(t, "VmHWM")
	for _, q := range []string{
		`SELECT length(repeat('x', 1000000000))`,
		`SELECT sum(length(repeat('x', 1000000 + i % 2))) FROM range(20000) t(i)`,
		`SELECT length(lpad('x', 300000000, 'y'))`,
		`SELECT len(range(1000000000))`,
		`SELECT len(list_resize([1], 100000000))`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		r, err := f.eng.Query(ctx, q, nil, f.resolve)
		if err == nil {
			for r.Next() {
			}
			err = r.Err()
			r.Close()
		}
		cancel()
		took := time.Since(start)
		if !errors.Is(err, ErrResourceExhausted) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want resource exhausted or deadline exceeded", q, err)
		}
		if took > 5*time.Second {
			t.Errorf("%s: ran %v under a 2s timeout", q, took)
		}
		t.Logf("%s: %v after %v", q, err, took)
	}
	if grew := vmKB(t, "VmHWM") - before; grew > 1<<20 {
		t.Errorf("peak RSS grew by %d MB", grew>>10)
	} else {
		t.Logf("peak RSS grew by %d MB", grew>>10)
	}
	got, err := f.rows(t, `SELECT repeat('ab', 3), lpad('a', 3, '-'), len(range(10)), repeat([1], 2)`, nil)
	if err != nil || strings.Join(got, ",") != "ababab|--a|10|[1,1]" {
		t.Fatalf("small values: %v %v", got, err)
	}
	if _, err := f.rows(t, `SELECT repeat('x', (random() * 10)::INT)`, nil); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("volatile count: %v", err)
	}
}

// TestServerRevealingRefused: `SELECT current_setting('temp_directory')`
// returned the gateway's data directory to any SQL caller, and
// allowed_directories, allowed_paths and secret_directory the warehouse,
// working and home directories; version() DuckDB's version, which
// GetSqlInfo does not tell; current_query() the rewritten query with the
// gateway's private view names; the transaction and query counters every
// realm's statements advance. Each is refused, PermissionDenied naming
// the function, however it is spelled or nested; the table functions and
// views over the settings, the version and the platform are refused as
// they were; and the functions that stay allowed answer nothing that
// names a path.
func TestServerRevealingRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gateway-data-dir")
	eng, err := New(Options{MemoryLimit: "512MB", Threads: 2, TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	f := newFixture(t)
	f.eng = eng
	cases := []struct {
		q    string
		kind error
		msg  string
	}{
		{`SELECT current_setting('temp_directory')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT CURRENT_SETTING('temp_directory')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT "current_setting"('allowed_directories')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT "Current_Setting"('allowed_paths')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT main.current_setting('secret_directory')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT system.main.current_setting('home_directory')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT pg_catalog.current_setting('temp_directory')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT "main"."current_setting"('temp_directory')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT ('temp_directory').current_setting()`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT d.current_setting() FROM (SELECT 'temp_directory' AS d) s`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT current_setting(region) FROM sales`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT id FROM sales WHERE region IN (SELECT current_setting('temp_directory'))`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT (SELECT max(current_setting('temp_directory')) FROM regions) FROM sales`, catalogs.ErrPermissionDenied, "current_setting"},
		{`WITH s AS (SELECT current_setting('temp_directory') AS d) SELECT d FROM s`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT * FROM (WITH s AS (SELECT 1) SELECT try(current_setting('temp_directory'))) q`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT list_transform(['temp_directory'], x -> current_setting(x))`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT coalesce(NULL, current_setting('temp_directory'))`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT count(*) FILTER (WHERE current_setting('temp_directory') <> '') FROM sales`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT id FROM sales ORDER BY current_setting('temp_directory')`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT * FROM range(1) t(i), LATERAL (SELECT current_setting('temp_directory')) s`, catalogs.ErrPermissionDenied, "current_setting"},
		{`SELECT version()`, catalogs.ErrPermissionDenied, "version"},
		{`SELECT VERSION()`, catalogs.ErrPermissionDenied, "version"},
		{`SELECT pg_catalog.version()`, catalogs.ErrPermissionDenied, "version"},
		{`SELECT current_query()`, catalogs.ErrPermissionDenied, "current_query"},
		{`SELECT pg_catalog.current_query()`, catalogs.ErrPermissionDenied, "current_query"},
		{`SELECT getvariable('x')`, catalogs.ErrPermissionDenied, "getvariable"},
		{`SELECT txid_current()`, catalogs.ErrPermissionDenied, "txid_current"},
		{`SELECT current_transaction_id()`, catalogs.ErrPermissionDenied, "current_transaction_id"},
		{`SELECT current_query_id()`, catalogs.ErrPermissionDenied, "current_query_id"},
		{`SELECT current_connection_id()`, catalogs.ErrPermissionDenied, "current_connection_id"},
		// Table functions and views over the settings, the version, the
		// platform and the extensions: refused as they were.
		{`SELECT * FROM duckdb_settings()`, catalogs.ErrPermissionDenied, "duckdb_settings"},
		{`SELECT value FROM main.duckdb_settings() WHERE name = 'temp_directory'`, catalogs.ErrPermissionDenied, "duckdb_settings"},
		{`SELECT * FROM duckdb_settings`, catalogs.ErrNotFound, "duckdb_settings"}, // no such view: a table name, resolved
		{`SELECT * FROM pg_settings`, catalogs.ErrPermissionDenied, "pg_settings"},
		{`SELECT * FROM pg_catalog.pg_settings`, catalogs.ErrPermissionDenied, "pg_settings"},
		{`SELECT * FROM duckdb_profiling_settings()`, catalogs.ErrPermissionDenied, "duckdb_profiling_settings"},
		{`SELECT * FROM pragma_version()`, catalogs.ErrPermissionDenied, "pragma_version"},
		{`SELECT * FROM PRAGMA_PLATFORM()`, catalogs.ErrPermissionDenied, "pragma_platform"},
		{`SELECT * FROM main.pragma_user_agent()`, catalogs.ErrPermissionDenied, "pragma_user_agent"},
		{`SELECT (SELECT platform FROM pragma_platform())`, catalogs.ErrPermissionDenied, "pragma_platform"},
		{`SELECT * FROM duckdb_extensions()`, catalogs.ErrPermissionDenied, "duckdb_extensions"},
		{`SELECT * FROM duckdb_temporary_files()`, catalogs.ErrPermissionDenied, "duckdb_temporary_files"},
		{`SELECT * FROM which_secret('s3://b/k', 's3')`, catalogs.ErrPermissionDenied, "which_secret"},
		{`PRAGMA version`, ErrUnsupported, "PRAGMA"},
		{`PRAGMA platform`, ErrUnsupported, "PRAGMA"},
		{`CALL pragma_version()`, ErrUnsupported, "CALL"},
		{`SET temp_directory = '/'`, ErrUnsupported, "SET"},
		{`RESET temp_directory`, ErrUnsupported, "RESET"},
		{`EXPLAIN SELECT * FROM sales`, ErrUnsupported, "EXPLAIN"},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			got, err := f.rows(t, c.q, nil)
			if !errors.Is(err, c.kind) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.msg)) {
				t.Fatalf("%q, error %v; want kind %v naming %q", got, err, c.kind, c.msg)
			}
		})
	}
	// What stays allowed names no path.
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	got, err := f.rows(t, `SELECT current_schema(), current_database(), current_catalog(), current_schemas(true),
		user, current_user, session_user, current_role(), pg_postmaster_start_time(), in_search_path('memory', 'main')`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, wd, home, "/tmp"} {
		if p != "" && strings.Contains(strings.Join(got, "\n"), p) {
			t.Errorf("an allowed function names %s: %q", p, got)
		}
	}
}
