package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestStarRocksPushSmuggling: text that one dialect reads and the other
// does not (a NUL byte, MySQL comments and escapes, backticks, double
// quotes, unicode quotes and spaces, adjacent strings) never carries SQL
// to StarRocks beyond the query DuckDB parsed: each such query is refused
// or runs in the engine, and no statement the stand-in saw names the
// smuggled table but the resolver's lookup of it, with the name as a
// quoted literal. A NUL byte reached StarRocks with the tail DuckDB never
// read; it is refused, InvalidArgument. A table name holding SQL is
// refused before any lookup.
func TestStarRocksPushSmuggling(t *testing.T) {
	requireEngine(t)
	e := startStarRocks(t)
	e.needStandin()
	c := e.g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), e.opts("people", true)); err != nil {
		t.Fatal(err)
	}
	cnxn := e.g.adbcConn(t, nil)
	tbl := fmt.Sprintf("sr.%s.people", e.db)
	for _, q := range []string{
		"SELECT id FROM " + tbl + "\x00 UNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE name = 'p0\x00' UNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE name = 'a\\' UNION ALL SELECT 7 FROM smuggled_tbl -- '",
		"SELECT id FROM " + tbl + " WHERE 1 = 1 /*!50000 UNION ALL SELECT 7 FROM smuggled_tbl */",
		"SELECT id FROM " + tbl + " WHERE 1 = 1 # UNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE 1 = 1 --\tUNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE name = \"x\" OR 1 IN (SELECT 7 FROM smuggled_tbl)",
		"SELECT `id` FROM " + tbl + " WHERE 1 IN (SELECT 7 FROM smuggled_tbl)",
		"SELECT id FROM " + tbl + " WHERE name = ＇x＇ UNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE name = U&'x' UNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE name = 'x'\u00a0UNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE name = 'x' 'y' UNION ALL SELECT 7 FROM smuggled_tbl",
		"SELECT id FROM " + tbl + " WHERE id = 1 INTO OUTFILE '/tmp/smuggled_tbl'",
		"SELECT id FROM " + tbl + " WHERE id = 0x1",
	} {
		e.reset()
		rows, err := queryRows(t, cnxn, q, nil)
		t.Logf("%q: %v %v", q, rows, err)
		for _, s := range e.queries() {
			if strings.Contains(s, "smuggled_tbl") && !strings.Contains(s, "TABLE_NAME = 'smuggled_tbl'") {
				t.Errorf("query %q reached StarRocks as %q", q, s)
			}
		}
		if strings.Contains(q, "\x00") {
			assertADBC(t, err, adbc.StatusInvalidArgument, "NUL byte")
		}
	}
	// A table name that is SQL is refused before any lookup.
	e.reset()
	_, err := queryRows(t, cnxn, fmt.Sprintf(`SELECT * FROM sr.%s."x' OR TABLE_NAME <> 'smuggled_tbl"`, e.db), nil)
	assertADBC(t, err, adbc.StatusInvalidArgument, "forbidden character")
	for _, s := range e.queries() {
		if strings.Contains(s, "smuggled_tbl") {
			t.Errorf("a table name reached StarRocks as %q", s)
		}
	}
}
