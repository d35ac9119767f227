package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
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

// TestStarRocksSystemDatabases: GetDbSchemas hid StarRocks' (and MySQL's)
// own databases, yet `SELECT * FROM sr.mysql.user` read the user table,
// sys and performance_schema were readable, and an ingest with mode
// create made tables in them. Every access to one, in any spelling, is
// PermissionDenied naming the database, and no statement naming it
// reaches StarRocks: queries (alone, in a subquery, joined with a user
// table so that the whole query would be pushed down), ingest create and
// append, and the metadata calls.
func TestStarRocksSystemDatabases(t *testing.T) {
	requireEngine(t)
	e := startStarRocks(t)
	e.needStandin()
	// StarRocks' audit database and table names hold "__": the refusals
	// below name them, as the client wrote them.
	e.g.ownUnderscores = append(e.g.ownUnderscores, "starrocks_audit_db__", "starrocks_audit_tbl__")
	c := e.g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), e.opts("people", true)); err != nil {
		t.Fatal(err)
	}
	cnxn := e.g.adbcConn(t, nil)
	user := fmt.Sprintf("sr.%s.people", e.db)
	for _, c := range []struct{ q, db string }{
		{`SELECT * FROM sr.mysql.user`, "mysql"},
		{`SELECT * FROM sr.MySQL.user`, "MySQL"},
		{`SELECT * FROM sr."MYSQL"."user"`, "MYSQL"},
		{`SELECT count(*) FROM sr.mysql.db`, "mysql"},
		{`SELECT * FROM sr.sys.sys_config`, "sys"},
		{`SELECT * FROM sr.performance_schema.accounts`, "performance_schema"},
		{`SELECT * FROM sr.information_schema.user_privileges`, "information_schema"},
		{`SELECT * FROM sr._statistics_.column_statistics`, "_statistics_"},
		{`SELECT * FROM sr.starrocks_audit_db__.starrocks_audit_tbl__`, "starrocks_audit_db__"},
		{`SELECT * FROM sr._starrocks_audit_db_.starrocks_audit_tbl`, "_starrocks_audit_db_"},
		{`SELECT id FROM ` + user + ` WHERE name IN (SELECT user FROM sr.mysql.user)`, "mysql"},
		{`SELECT p.id, u.user FROM ` + user + ` p JOIN sr.mysql.user u ON u.host = p.name`, "mysql"},
		{`WITH u AS (SELECT * FROM sr.mysql.user) SELECT count(*) FROM u`, "mysql"},
	} {
		t.Run(c.q, func(t *testing.T) {
			e.reset()
			_, err := queryRows(t, cnxn, c.q, nil)
			assertADBC(t, err, adbc.StatusUnauthorized, c.db)
			for _, s := range e.queries() {
				if l, db := strings.ToLower(s), strings.ToLower(c.db); strings.Contains(l, "`"+db+"`") || strings.Contains(l, "'"+db+"'") {
					t.Errorf("%q reached StarRocks as %q", c.q, s)
				}
			}
		})
	}
	// A backtick-quoted name is no name of the gateway's.
	_, err := queryRows(t, cnxn, "SELECT * FROM sr.\"`mysql`\".user", nil)
	assertADBC(t, err, adbc.StatusInvalidArgument, "forbidden character")

	// Ingest: create in sys and in _statistics_, append to mysql.user.
	table := "fgw_" + strings.TrimPrefix(e.db, "fgw_")
	t.Cleanup(func() {
		for _, db := range []string{"sys", "mysql", "information_schema", "performance_schema"} {
			_, _ = e.sql.Exec("DROP TABLE IF EXISTS `" + db + "`.`" + table + "`")
		}
	})
	for _, db := range []string{"sys", "mysql", "SYS", "_statistics_", "information_schema", "performance_schema"} {
		cat, db := "sr", db
		for _, create := range []bool{true, false} {
			o := modeCreate(table)
			if !create {
				o = modeAppend("user")
			}
			o.Catalog, o.Schema = &cat, &db
			_, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), o)
			assertStatus(t, err, codes.PermissionDenied, db)
		}
	}
	var n int
	if err := e.sql.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = ?", table).Scan(&n); err != nil || n != 0 {
		t.Fatalf("tables named %s in StarRocks = %d, %v; want none", table, n, err)
	}
	// Metadata: GetTables of a system database lists nothing.
	cat, sch := "sr", "mysql"
	tables := collect(t, ctx, c, infoOK(t)(c.GetTables(ctx, &flightsql.GetTablesOpts{Catalog: &cat, DbSchemaFilterPattern: &sch})))
	if n := countRows(tables); n != 0 {
		t.Errorf("GetTables of sr.mysql listed %d tables", n)
	}
}

// TestStarRocksDatabasesBound: a catalog whose databases property is set
// reaches those databases only, under their namespaces. Any other
// database (a user database named directly, the mapped database under
// its own name) does not exist in the catalog for a query, an ingest or
// the listing, and no statement naming it reaches StarRocks: before, it
// was hidden from GetDbSchemas only, and read and written through every
// other call.
func TestStarRocksDatabasesBound(t *testing.T) {
	requireEngine(t)
	e := startStarRocksWith(t, func(db string) map[string]string { return map[string]string{"databases": "app=" + db} })
	e.needStandin()
	other := e.db + "_other"
	if _, err := e.sql.Exec("CREATE DATABASE `" + other + "`"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.sql.Exec("DROP DATABASE IF EXISTS `" + other + "`") })
	if _, err := e.sql.Exec("CREATE TABLE `" + other + "`.`secret` (id INT)"); err != nil {
		t.Fatal(err)
	}
	c := e.g.flightClient(t)
	ctx := context.Background()
	cat, app := "sr", "app"
	o := modeCreate("people")
	o.Catalog, o.Schema = &cat, &app
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), o); err != nil {
		t.Fatal(err)
	}
	if got := e.count("people"); got != 3 {
		t.Fatalf("rows in %s.people = %d, want 3", e.db, got)
	}
	cnxn := e.g.adbcConn(t, nil)
	for _, q := range []string{`SELECT count(*) FROM sr.app.people`, `SELECT count(*) FROM sr.APP.people`} {
		if got := mustRows(t, cnxn, q, nil); strings.Join(got, ",") != "3" {
			t.Fatalf("%s: %v", q, got)
		}
	}
	for _, q := range []struct{ q, table string }{
		{`SELECT * FROM sr.` + other + `.secret`, other + ".secret"},
		{`SELECT * FROM sr.` + e.db + `.people`, e.db + ".people"},
		{`SELECT p.id FROM sr.app.people p JOIN sr.` + other + `.secret s ON s.id = p.id`, other + ".secret"},
		{`SELECT id FROM sr.app.people WHERE id IN (SELECT id FROM sr.` + other + `.secret ORDER BY id)`, other + ".secret"},
	} {
		e.reset()
		_, err := queryRows(t, cnxn, q.q, nil)
		assertADBC(t, err, adbc.StatusNotFound, q.table)
		for _, s := range e.queries() {
			if strings.Contains(s, other) || strings.Contains(s, "secret") {
				t.Errorf("%q reached StarRocks as %q", q.q, s)
			}
		}
	}
	for _, ns := range []string{other, e.db} {
		ns := ns
		for _, create := range []bool{true, false} {
			o := modeCreate("fresh")
			if !create {
				o = modeAppend("secret")
			}
			o.Catalog, o.Schema = &cat, &ns
			e.reset()
			_, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), o)
			assertStatus(t, err, codes.NotFound, ns)
			for _, s := range e.queries() {
				if strings.Contains(s, "`"+ns+"`") || strings.Contains(s, "'"+ns+"'") {
					t.Errorf("an ingest into %s reached StarRocks as %q", ns, s)
				}
			}
		}
	}
	var n int
	if err := e.sql.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'fresh'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("tables named fresh = %d, %v; want none", n, err)
	}
	schemas := stringsOf(collect(t, ctx, c, infoOK(t)(c.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{Catalog: &cat}))), "db_schema_name")
	if !slices.Equal(schemas, []string{"app"}) {
		t.Errorf("GetDbSchemas of sr = %v, want [app]", schemas)
	}
	tables := stringsOf(collect(t, ctx, c, infoOK(t)(c.GetTables(ctx, &flightsql.GetTablesOpts{Catalog: &cat}))), "table_name")
	if !slices.Equal(tables, []string{"people"}) {
		t.Errorf("GetTables of sr = %v, want [people]", tables)
	}
}
