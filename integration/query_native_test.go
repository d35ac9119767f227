package integration

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
)

// querySchema runs a query through ADBC and returns its result schema and
// rows rendered as "a|b|c".
func querySchema(t *testing.T, cnxn adbc.Connection, q string) (*arrow.Schema, []string) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rdr.Release()
	out, err := renderRows(rdr)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rdr.Schema(), out
}

// readsFiles reports whether a query over table ran where DuckDB reads the
// table's Parquet files itself, as the gateway's debug log of the query's
// scan says (a query cannot ask: current_setting is refused).
func readsFiles(t *testing.T, g *gateway, cnxn adbc.Connection, table string) bool {
	t.Helper()
	mark := len(g.logs.String())
	querySchema(t, cnxn, `SELECT count(*) FROM `+table)
	var scans []string
	for _, l := range strings.Split(g.logs.String()[mark:], "\n") {
		if strings.Contains(l, `msg="query scan"`) {
			scans = append(scans, l)
		}
	}
	if len(scans) != 1 {
		t.Fatalf("query of %s: %d scans logged, want 1: %q", table, len(scans), scans)
	}
	return strings.Contains(scans[0], " native=true")
}

// TestQueryNativeParquet: a table with a plain file plan is read by DuckDB
// from its Parquet files; after its schema evolves it is read through the
// catalog scan; both give the same rows and the same schema. User SQL can
// name none of the files either way.
func TestQueryNativeParquet(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	for i := range 3 {
		if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreateAppend, people(t, i*100, 100)); err != nil {
			t.Fatal(err)
		}
	}
	wh := filepath.Join(g.dataDir, "warehouse")
	if !readsFiles(t, g, cnxn, "people") {
		t.Fatal("a plain table is not read from its files")
	}
	const q = `SELECT id, name, score FROM people WHERE id % 7 = 0 ORDER BY id`
	nativeSchema, nativeRows := querySchema(t, cnxn, q)
	if _, agg := querySchema(t, cnxn, `SELECT count(*), sum(id), count(DISTINCT name) FROM people WHERE id >= 50`); strings.Join(agg, ",") != "250|43625|250" {
		t.Errorf("aggregate over the files: %q", agg)
	}

	c, ctx := g.flightClient(t), context.Background()
	files := g.parquetFiles(t)
	if len(files) != 3 {
		t.Fatalf("%d Parquet files, want 3", len(files))
	}
	var err error
	for _, q := range []string{
		`SELECT * FROM read_parquet('` + files[0] + `')`,
		`SELECT count(*) FROM people, read_parquet(['` + files[1] + `'])`,
		`SELECT * FROM parquet_scan('` + files[0] + `')`,
		`SELECT * FROM parquet_metadata('` + files[0] + `')`,
		`SELECT * FROM glob('` + wh + `/*')`,
		`SELECT * FROM read_blob('` + files[0] + `')`,
	} {
		_, err = c.Execute(ctx, q)
		assertStatus(t, err, codes.PermissionDenied, "disabled")
	}
	// A path as a table name is a table name, and not a valid one.
	_, err = c.Execute(ctx, `SELECT * FROM '`+files[0]+`'`)
	assertStatus(t, err, codes.InvalidArgument, "forbidden character")

	// Evolve the schema, as another engine sharing the catalog would: the
	// old files no longer carry every column, so the table is read through
	// the catalog scan.
	g.evolve(t, "people")
	if readsFiles(t, g, cnxn, "people") {
		t.Fatal("a table with an evolved schema is read from its files")
	}
	streamSchema, streamRows := querySchema(t, cnxn, q)
	if !nativeSchema.Equal(streamSchema) {
		t.Errorf("result schemas differ:\nfiles  %s\nstream %s", nativeSchema, streamSchema)
	}
	if strings.Join(nativeRows, "\n") != strings.Join(streamRows, "\n") {
		t.Errorf("rows differ:\nfiles  %q\nstream %q", nativeRows, streamRows)
	}
	if _, got := querySchema(t, cnxn, `SELECT count(id), count(extra) FROM people`); strings.Join(got, "") != "300|0" {
		t.Errorf("after evolution: %q", got)
	}
}

// TestQueryNativeRealms: each realm's table is read from its files, and
// neither realm can name a file, its own or the other's.
func TestQueryNativeRealms(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, realmConfig(t))
	alice, actx := login(t, g, "alice", "alice-pw")
	bob, bctx := login(t, g, "bob", "bob-pw")
	for _, c := range []struct {
		cat   string
		table string
		ctx   context.Context
	}{{"salesdb", "secret", actx}, {"opsdb", "ops", bctx}} {
		opts := modeCreate(c.table)
		opts.Catalog = ptr(c.cat)
		client := alice
		if c.ctx == bctx {
			client = bob
		}
		if _, err := client.ExecuteIngest(c.ctx, reader(t, people(t, 0, 3)), opts); err != nil {
			t.Fatal(err)
		}
	}
	files := func(dir string) []string {
		var out []string
		_ = filepath.WalkDir(filepath.Join(g.dataDir, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
				out = append(out, p)
			}
			return nil
		})
		if len(out) == 0 {
			t.Fatalf("no Parquet file under %s", dir)
		}
		return out
	}
	sales, ops := files("sales"), files("ops")
	mark := len(g.logs.String())
	info, err := alice.Execute(actx, `SELECT count(*) FROM salesdb."default".secret`)
	if err != nil {
		t.Fatalf("alice reads her table: %v", err)
	}
	if got := countRows(collect(t, actx, alice, info)); got != 1 {
		t.Fatalf("alice's count: %d rows", got)
	}
	if logs := g.logs.String()[mark:]; !strings.Contains(logs, `msg="query scan"`) || !strings.Contains(logs, " native=true") {
		t.Errorf("alice's table is not read from its files:\n%s", logs)
	}
	// Which directories the query may read is the server's business, not
	// hers (engine/native_test.go TestNativeDirectories checks the fence).
	_, err = alice.Execute(actx, `SELECT current_setting('allowed_directories')::VARCHAR FROM salesdb."default".secret`)
	assertStatus(t, err, codes.PermissionDenied, "current_setting")
	for _, c := range []struct {
		who  string
		file string
	}{{"alice", sales[0]}, {"alice", ops[0]}, {"bob", sales[0]}, {"bob", ops[0]}} {
		client, ctx := alice, actx
		if c.who == "bob" {
			client, ctx = bob, bctx
		}
		for _, q := range []string{
			`SELECT * FROM read_parquet('` + c.file + `')`,
			fmt.Sprintf(`SELECT count(*) FROM %s, read_parquet('%s')`, map[string]string{"alice": `salesdb."default".secret`, "bob": `opsdb."default".ops`}[c.who], c.file),
		} {
			_, err := client.Execute(ctx, q)
			assertStatus(t, err, codes.PermissionDenied, "disabled")
		}
	}
}
