package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestHostileSQLRealms: the SQL attacks of issue 9 through ADBC, with two
// realms. Bob's stream-path query left a view in DuckDB's shared catalog
// that Alice could list (SHOW ALL TABLES) and read through an
// out-of-scope CTE name, after its stream was freed (SIGSEGV); catalog
// views were reachable the same way; several statements were refused as
// "SELECT is not supported"; repeat() ran past the statement timeout.
func TestHostileSQLRealms(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, realmConfig(t)+"engine: {memory_limit: 512MB}\ntimeouts: {statement: 2s}\n")
	alice := g.adbcConn(t, map[string]string{adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "alice-pw"})
	bob := g.adbcConn(t, map[string]string{adbc.OptionKeyUsername: "bob", adbc.OptionKeyPassword: "bob-pw"})
	if _, err := ingest(t, alice, "orders", adbc.OptionValueIngestModeCreate, people(t, 0, 3),
		adbc.OptionValueIngestTargetCatalog, "salesdb"); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, bob, "secrets", adbc.OptionValueIngestModeCreate, people(t, 100, 3),
		adbc.OptionValueIngestTargetCatalog, "opsdb"); err != nil {
		t.Fatal(err)
	}
	// A quoted CTE name sends Bob's query down the stream path.
	if got := mustRows(t, bob, `WITH "q q" AS (SELECT 1 AS a) SELECT count(*) FROM opsdb."default".secrets, "q q"`, nil); strings.Join(got, ",") != "3" {
		t.Fatalf("bob: %v", got)
	}
	cases := []struct {
		q    string
		code adbc.Status
		msg  string
	}{
		{`SHOW ALL TABLES`, adbc.StatusInvalidArgument, "SHOW is not supported"},
		{`DESCRIBE opsdb."default".secrets`, adbc.StatusInvalidArgument, "DESCRIBE is not supported"},
		{`SUMMARIZE salesdb."default".orders`, adbc.StatusInvalidArgument, "SUMMARIZE is not supported"},
		{`SELECT * FROM (WITH v AS (SELECT 1) SELECT 1) q, v`, adbc.StatusNotFound, "v"},
		{`SELECT * FROM opsdb."default".secrets`, adbc.StatusNotFound, "secrets"},
		{`SELECT * FROM pg_settings`, adbc.StatusUnauthorized, "pg_settings"},
		{`SELECT * FROM duckdb_databases`, adbc.StatusUnauthorized, "duckdb_databases"},
		{`SELECT * FROM sqlite_master`, adbc.StatusUnauthorized, "sqlite_master"},
		{`SELECT * FROM information_schema.key_column_usage`, adbc.StatusUnauthorized, "information_schema.key_column_usage"},
		{`SELECT 1; ATTACH ':memory:' AS m`, adbc.StatusInvalidArgument, "multiple statements are not supported: SELECT; ATTACH"},
		// The server's settings and version (issue 21): the data directory
		// was one current_setting away.
		{`SELECT current_setting('temp_directory')`, adbc.StatusUnauthorized, "current_setting"},
		{`SELECT * FROM salesdb."default".orders WHERE name IN (SELECT pg_catalog.current_setting('allowed_directories'))`, adbc.StatusUnauthorized, "current_setting"},
		{`SELECT version()`, adbc.StatusUnauthorized, "version"},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			_, err := queryRows(t, alice, c.q, nil)
			assertADBC(t, err, c.code, c.msg)
		})
	}
	_, err := execUpdate(t, alice, `INSERT INTO salesdb."default".orders SELECT * FROM salesdb."default".orders; DROP TABLE x`)
	assertADBC(t, err, adbc.StatusInvalidArgument, "multiple statements are not supported: INSERT; DROP")

	// repeat() under a 2s statement timeout and a 512MB engine: refused
	// at once when its size is known, stopped by the timeout when each
	// value is within the bound, the process's peak RSS bounded.
	before := peakRSSKB(t)
	start := time.Now()
	_, err = queryRows(t, alice, `SELECT length(repeat('x', 1000000000))`, nil)
	assertADBC(t, err, adbc.StatusInternal, "repeat would return more than") // ResourceExhausted
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("refusing repeat took %v", took)
	}
	start = time.Now()
	_, err = queryRows(t, alice, `SELECT sum(length(repeat('x', 60000 + i % 2))) FROM range(1000000) t(i)`, nil)
	assertADBC(t, err, adbc.StatusTimeout, "statement timeout")
	took := time.Since(start)
	if took > 6*time.Second {
		t.Errorf("a 2s statement timeout stopped repeat after %v", took)
	}
	grew := peakRSSKB(t) - before
	if grew > 1<<20 {
		t.Errorf("peak RSS grew by %d MB", grew>>10)
	}
	t.Logf("timed out after %v; peak RSS grew by %d MB", took, grew>>10)
	if got := mustRows(t, alice, `SELECT count(*) FROM salesdb."default".orders`, nil); strings.Join(got, ",") != "3" {
		t.Fatalf("alice after the attacks: %v", got)
	}
}

// peakRSSKB is the process's peak resident set (VmHWM), in kB.
func peakRSSKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
