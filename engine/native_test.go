//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/catalogs"
)

// planScanner is a memScanner that also plans files: the fixture's tables
// written as Parquet under root, two files each.
type planScanner struct {
	*memScanner
	root  string
	files map[string][]string
	plain bool
}

func (p *planScanner) PlanFiles(_ context.Context, t catalogs.TableIdent, _ catalogs.ScanRequest) (*catalogs.FilePlan, error) {
	files := p.files[t.Name]
	return &catalogs.FilePlan{Files: files, Root: p.root, Plain: p.plain, FilesTotal: len(files)}, nil
}

// typedSchema has the types whose DuckDB mapping could differ between a
// Parquet file and an Arrow stream.
var typedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// writeParquet writes rec as two Parquet files under dir with a DuckDB of
// its own (the engine's cannot write files).
func writeParquet(t *testing.T, dir string, rec arrow.RecordBatch) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var db duck.Database
	if duck.Open("", &db) == duck.StateError {
		t.Fatal("open duckdb")
	}
	defer duck.Close(&db)
	c, err := connect(db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	half := rec.NumRows() / 2
	var files []string
	for i, part := range []arrow.RecordBatch{rec.NewSlice(0, half), rec.NewSlice(half, rec.NumRows())} {
		rdr, err := array.NewRecordReader(part.Schema(), []arrow.RecordBatch{part})
		part.Release()
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("src%d", i)
		release, err := registerStream(c, name, rdr)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, fmt.Sprintf("part-%d.parquet", i))
		err = c.exec("COPY (SELECT * FROM " + name + ") TO " + sqlString(f) + " (FORMAT parquet)")
		release()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

type nativeFixture struct {
	*fixture
	root    string // realm A's warehouse: the fixture's tables
	other   string // realm B's warehouse
	plain   *planScanner
	unplain *planScanner
}

func newNativeFixture(t *testing.T) *nativeFixture {
	t.Helper()
	f := newFixture(t)
	base := t.TempDir()
	nf := &nativeFixture{fixture: f, root: filepath.Join(base, "a"), other: filepath.Join(base, "b")}
	f.scan.tables["typed"] = batch(t, typedSchema, `[
		{"id":1,"ts":"2024-03-01T12:00:00Z","day":"2024-03-01","price":"12.50","tag":"x","ok":true,"n":7},
		{"id":2,"ts":"2024-03-02T00:00:00.123456Z","day":"2024-03-02","price":"-0.01","tag":"","ok":false,"n":-1},
		{"id":3,"ts":null,"day":null,"price":null,"tag":null,"ok":null,"n":null},
		{"id":4,"ts":"1969-12-31T23:59:59Z","day":"1969-12-31","price":"99999999.99","tag":"ü","ok":true,"n":2147483647}]`)
	files := map[string][]string{}
	for name, rec := range f.scan.tables {
		files[name] = writeParquet(t, filepath.Join(nf.root, name, "data"), rec)
	}
	writeParquet(t, filepath.Join(nf.other, "secret", "data"), f.scan.tables["sales"])
	nf.plain = &planScanner{memScanner: f.scan, root: nf.root, files: files, plain: true}
	nf.unplain = &planScanner{memScanner: f.scan, root: nf.root, files: files, plain: false}
	return nf
}

// resolver is the fixture's resolver with sc as every table's scanner.
func (f *nativeFixture) resolver(sc catalogs.Scanner) Resolver {
	return func(cat, sch, name string) (Table, error) {
		t, err := f.resolve(cat, sch, name)
		t.Scanner = sc
		return t, err
	}
}

type result struct {
	rows   []string
	schema *arrow.Schema
	scans  []ScanStats
}

func (f *nativeFixture) run(t *testing.T, sc catalogs.Scanner, q string, params arrow.RecordBatch) (*result, error) {
	t.Helper()
	r, err := f.eng.Query(context.Background(), q, params, f.resolver(sc))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res := &result{schema: r.Schema(), scans: r.Scans()}
	for r.Next() {
		res.rows = append(res.rows, render(r.RecordBatch())...)
	}
	return res, r.Err()
}

// TestNativeMatchesStream runs each query over plain plans (DuckDB reads
// the Parquet files) and over the streams (the plan is not plain): same
// rows, same result schema, the same schema Describe gives.
func TestNativeMatchesStream(t *testing.T) {
	f := newNativeFixture(t)
	queries := []string{
		`SELECT * FROM typed ORDER BY id`,
		`SELECT id, ts, price FROM typed WHERE ts >= TIMESTAMPTZ '2024-03-01 13:00:00+00' ORDER BY id`,
		`SELECT tag, n FROM typed WHERE price > 0 AND day < DATE '2024-03-02' ORDER BY id`,
		`SELECT count(*), sum(price), min(ts), max(day) FROM typed`,
		`SELECT region, count(*), sum(amount), avg(qty) FROM sales GROUP BY region ORDER BY region`,
		`SELECT s.id, r.manager FROM sales s JOIN regions r ON s.region = r.region WHERE s.amount > 6 ORDER BY 1`,
		`SELECT s.id, r.manager FROM sales s LEFT JOIN regions r USING (region) WHERE r.manager IS NULL`,
		`WITH e AS (SELECT * FROM sales WHERE region = 'eu') SELECT (SELECT count(*) FROM e), (SELECT max(id) FROM e)`,
		`SELECT count(*) FROM (SELECT id, amount FROM sales WHERE amount > 6)`,
		`SELECT i, (SELECT count(*) FROM sales WHERE qty >= i) AS c FROM range(1, 4) t(i) ORDER BY i`,
	}
	for _, q := range queries {
		t.Run(q, func(t *testing.T) {
			native, err := f.run(t, f.plain, q, nil)
			if err != nil {
				t.Fatalf("native: %v", err)
			}
			stream, err := f.run(t, f.unplain, q, nil)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			for _, s := range native.scans {
				if !s.Native || s.FilesPlanned != 2 {
					t.Errorf("scan of %s: native %v, %d files; want native, 2 files", s.Table, s.Native, s.FilesPlanned)
				}
			}
			for _, s := range stream.scans {
				if s.Native {
					t.Errorf("scan of %s is native over a plan that is not plain", s.Table)
				}
			}
			if strings.Join(native.rows, "\n") != strings.Join(stream.rows, "\n") {
				t.Errorf("rows differ:\nnative %q\nstream %q", native.rows, stream.rows)
			}
			if !native.schema.Equal(stream.schema) {
				t.Errorf("schemas differ:\nnative %s\nstream %s", native.schema, stream.schema)
			}
			d, err := f.eng.Describe(context.Background(), q, f.resolver(f.plain))
			if err != nil {
				t.Fatal(err)
			}
			if !d.Schema.Equal(native.schema) {
				t.Errorf("described schema %s, native result %s", d.Schema, native.schema)
			}
		})
	}
	// Parameters bind the same way.
	p := batch(t, arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil),
		`[{"a":"eu","b":2}]`)
	got, err := f.run(t, f.plain, `SELECT id, amount FROM sales WHERE region = ? AND qty >= ?`, p)
	if err != nil || strings.Join(got.rows, ",") != "3|5" || !got.scans[0].Native {
		t.Fatalf("parameterized native query: %+v, %v", got, err)
	}
}

// TestNativeFallback: one table without a usable plan sends the whole
// query to the stream path.
func TestNativeFallback(t *testing.T) {
	f := newNativeFixture(t)
	mixed := func(cat, sch, name string) (Table, error) {
		t, err := f.resolve(cat, sch, name)
		t.Scanner = f.plain
		if name == "regions" {
			t.Scanner = f.unplain
		}
		return t, err
	}
	r, err := f.eng.Query(context.Background(), `SELECT count(*) FROM sales s JOIN regions r USING (region)`, nil, mixed)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	for _, s := range r.Scans() {
		if s.Native {
			t.Errorf("scan of %s is native in a query with a table that is not plain", s.Table)
		}
	}
	// A plan DuckDB cannot read (a file gone since planning) falls back.
	gone := &planScanner{memScanner: f.scan, root: f.root, plain: true,
		files: map[string][]string{"sales": {filepath.Join(f.root, "sales", "data", "gone.parquet")}}}
	res, err := f.run(t, gone, `SELECT count(*) FROM sales`, nil)
	if err != nil || strings.Join(res.rows, "") != "4" || res.scans[0].Native {
		t.Fatalf("unreadable plan: %+v, %v; want the stream path's answer", res, err)
	}
	// A plan is used only when it is safe to hand to DuckDB as it is.
	bad := []*catalogs.FilePlan{
		{Plain: true, Root: f.root},
		{Plain: true, Root: "/", Files: []string{"/etc/passwd"}},
		{Plain: true, Root: f.root, Files: []string{filepath.Join(f.other, "secret", "data", "part-0.parquet")}},
		{Plain: true, Root: f.root, Files: []string{f.root + "/../b/secret/data/part-0.parquet"}},
		{Plain: true, Root: f.root, Files: []string{f.root + "/sales/data/*.parquet"}},
		{Plain: true, Root: f.root + "/", Files: []string{f.root + "/sales/data/part-0.parquet"}},
		{Plain: false, Root: f.root, Files: []string{f.root + "/sales/data/part-0.parquet"}},
	}
	for _, fp := range bad {
		if usable(fp) {
			t.Errorf("plan %+v is usable", fp)
		}
	}
	if !usable(&catalogs.FilePlan{Plain: true, Root: f.root, Files: []string{f.root + "/sales/data/part-0.parquet"}}) {
		t.Error("a plain plan under its root is not usable")
	}
}

// TestNativeRefusesFiles: where DuckDB may read the warehouse, user SQL
// still cannot name a file, of its own table or of another realm's.
func TestNativeRefusesFiles(t *testing.T) {
	f := newNativeFixture(t)
	own := f.plain.files["sales"][0]
	other := filepath.Join(f.other, "secret", "data", "part-0.parquet")
	// The fast path is on: the table itself is read from its files.
	res, err := f.run(t, f.plain, `SELECT count(*) FROM sales`, nil)
	if err != nil || strings.Join(res.rows, "") != "4" || !res.scans[0].Native {
		t.Fatalf("native count: %+v, %v", res, err)
	}
	cases := []struct {
		q    string
		kind error
	}{
		{`SELECT * FROM read_parquet('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM read_parquet('` + other + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM read_parquet(['` + own + `'])`, catalogs.ErrPermissionDenied},
		{`SELECT s.id FROM sales s, read_parquet('` + own + `') p`, catalogs.ErrPermissionDenied},
		{`SELECT (SELECT count(*) FROM main.read_parquet('` + other + `')) FROM sales`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM parquet_scan('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM parquet_metadata('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM parquet_schema('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM read_csv('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM read_blob('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM read_text('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM glob('` + f.root + `/*/*/*')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM query('SELECT * FROM read_parquet(''` + own + `'')')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM query_table('` + own + `')`, catalogs.ErrPermissionDenied},
		{`SELECT * FROM duckdb_settings()`, catalogs.ErrPermissionDenied},
		// A path as a table name is a table name: it is resolved, and
		// there is no such table.
		{`SELECT * FROM '` + own + `'`, catalogs.ErrNotFound},
		{`SELECT * FROM sales, "` + other + `"`, catalogs.ErrNotFound},
		// DESCRIBE and SUMMARIZE read DuckDB's catalog: refused.
		{`SUMMARIZE '` + own + `'`, catalogs.ErrInvalidArgument},
		{`SELECT * FROM (DESCRIBE '` + other + `'), sales`, catalogs.ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			_, err := f.run(t, f.plain, c.q, nil)
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
		})
	}
	// A CTE named like a file, named again out of its scope, is a
	// table name there, which does not resolve.
	q := `SELECT count(*) FROM sales, (WITH "` + own + `" AS (SELECT 1 AS a) SELECT a FROM "` + own + `") c, "` + own + `" f`
	if res, err := f.run(t, f.plain, q, nil); !errors.Is(err, catalogs.ErrNotFound) {
		t.Fatalf("out-of-scope CTE name: %v, %v", res, err)
	}
}

// TestNativeDirectories checks DuckDB's own fence, below the SQL checks:
// the native DuckDB of a root reads under that root only.
func TestNativeDirectories(t *testing.T) {
	f := newNativeFixture(t)
	sibling := f.root + "x"
	writeParquet(t, sibling, f.scan.tables["regions"])
	db, err := f.eng.natives.get(f.eng.opts, []string{f.root})
	if err != nil || db == nil {
		t.Fatalf("native db: %v", err)
	}
	pooled, err := db.conn() // made before the lock
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.close()
	fresh, err := connect(db.db)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.close()
	for _, c := range []*conn{pooled, fresh} {
		nativeFence(t, f, c, sibling)
	}
}

func nativeFence(t *testing.T, f *nativeFixture, c *conn, sibling string) {
	t.Helper()
	if err := c.exec(`SELECT * FROM read_parquet(` + sqlString(f.plain.files["sales"][0]) + `)`); err != nil {
		t.Fatalf("a file under the root: %v", err)
	}
	for _, p := range []string{
		filepath.Join(f.other, "secret", "data", "part-0.parquet"),
		f.root + "/../b/secret/data/part-0.parquet",
		filepath.Join(sibling, "part-0.parquet"),
		"/etc/passwd",
	} {
		err := c.exec(`SELECT * FROM read_parquet(` + sqlString(p) + `)`)
		if !errors.Is(err, catalogs.ErrPermissionDenied) {
			t.Errorf("read %s: %v, want permission denied", p, err)
		}
	}
	for _, st := range []string{`SET allowed_directories = ['/']`, `SET enable_external_access = true`, `SET disabled_optimizers = ''`} {
		if err := c.exec(st); err == nil || !strings.Contains(err.Error(), "locked") {
			t.Errorf("%s: %v, want locked", st, err)
		}
	}
}

// TestNativeStopsEarly: a native query closed or cancelled after its first
// batch stops (its batches are gathered ahead on a goroutine).
func TestNativeStopsEarly(t *testing.T) {
	f := newNativeFixture(t)
	const q = `SELECT s.id, i FROM sales s, range(100000000) t(i)`
	r, err := f.eng.Query(context.Background(), q, nil, f.resolver(f.plain))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() || !r.Scans()[0].Native {
		t.Fatalf("first batch: %v, native %v", r.Err(), r.Scans()[0].Native)
	}
	r.Close()

	ctx, cancel := context.WithCancel(context.Background())
	r, err = f.eng.Query(ctx, q, nil, f.resolver(f.plain))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Next() {
		t.Fatalf("first batch: %v", r.Err())
	}
	cancel()
	for r.Next() {
	}
	if !errors.Is(r.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v, want canceled", r.Err())
	}
	r.Close()

	// The pooled connections serve the next queries, with no view left
	// of the earlier ones.
	for range nativeConns + 2 {
		res, err := f.run(t, f.plain, `SELECT count(*) FROM sales`, nil)
		if err != nil || strings.Join(res.rows, "") != "4" || !res.scans[0].Native {
			t.Fatalf("query after an interrupted one: %+v, %v", res, err)
		}
	}
	db, err := f.eng.natives.get(f.eng.opts, []string{f.root})
	if err != nil {
		t.Fatal(err)
	}
	for range len(db.pool) {
		c, _ := db.conn()
		n, err := c.queryString(`SELECT count(*)::VARCHAR FROM duckdb_views() WHERE starts_with(view_name, $1)`, "__flightgw_")
		if err != nil || n != "0" {
			t.Errorf("a pooled connection has %s views left (%v)", n, err)
		}
		db.put(c, nil)
	}
}
