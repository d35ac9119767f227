//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/catalogs"
)

// memScanner is a catalogs.Scanner over in-memory batches that records
// every request.
type memScanner struct {
	mu     sync.Mutex
	tables map[string]arrow.RecordBatch
	reqs   []catalogs.ScanRequest
}

func (m *memScanner) Scan(_ context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.tables[t.Name]
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", t)
	}
	m.reqs = append(m.reqs, req)
	var cols []arrow.Array
	var fields []arrow.Field
	for i, f := range rec.Schema().Fields() {
		if req.Columns == nil || included(req.Columns, f.Name) {
			cols = append(cols, rec.Column(i))
			fields = append(fields, f)
		}
	}
	n := rec.NumRows()
	if req.Limit > 0 && len(req.Filters) == 0 {
		n = min(n, req.Limit) // as few rows as the limit allows
	}
	whole := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer whole.Release()
	out := whole.NewSlice(0, n)
	defer out.Release()
	// Many small batches, as a real scan returns.
	var parts []arrow.RecordBatch
	for off := int64(0); off < out.NumRows(); off += 100 {
		p := out.NewSlice(off, min(off+100, out.NumRows()))
		defer p.Release()
		parts = append(parts, p)
	}
	rdr, err := array.NewRecordReader(out.Schema(), parts)
	if err != nil {
		return nil, err
	}
	return &catalogs.ScanResult{Reader: rdr, FilesPlanned: 1, FilesTotal: 1}, nil
}

func batch(t testing.TB, schema *arrow.Schema, js string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

type fixture struct {
	eng     *Engine
	scan    *memScanner
	resolve Resolver
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	eng, err := New(Options{MemoryLimit: "512MB", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	sales := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	regions := arrow.NewSchema([]arrow.Field{
		{Name: "region", Type: arrow.BinaryTypes.String},
		{Name: "manager", Type: arrow.BinaryTypes.String},
	}, nil)
	s := &memScanner{tables: map[string]arrow.RecordBatch{
		"sales": batch(t, sales, `[{"id":1,"region":"eu","amount":10.5,"qty":1},{"id":2,"region":"us","amount":20,"qty":2},
			{"id":3,"region":"eu","amount":5,"qty":3},{"id":4,"region":null,"amount":null,"qty":null}]`),
		"regions": batch(t, regions, `[{"region":"eu","manager":"ann"},{"region":"us","manager":"bob"}]`),
	}}
	resolve := func(cat, sch, name string) (Table, error) {
		if (cat != "" && cat != "lake") || (sch != "" && sch != "default") {
			return Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s.%s.%s not found", cat, sch, name)
		}
		rec, ok := s.tables[name]
		if !ok {
			return Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", name)
		}
		return Table{Ident: catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: name},
			Scanner: s, Schema: rec.Schema()}, nil
	}
	return &fixture{eng: eng, scan: s, resolve: resolve}
}

// rows runs a query and renders every row as text, one line per row.
func (f *fixture) rows(t *testing.T, q string, params arrow.RecordBatch) ([]string, error) {
	t.Helper()
	r, err := f.eng.Query(context.Background(), q, params, f.resolve)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	for r.Next() {
		out = append(out, render(r.RecordBatch())...)
	}
	return out, r.Err()
}

// render renders each row of b as "a|b|c", copied out of b's buffers:
// a string cell is a view of them, and b's buffers go back to the pool
// (TestRenderOutlivesTheBatch).
func render(b arrow.RecordBatch) []string {
	var out []string
	for i := range int(b.NumRows()) {
		var cells []string
		for _, c := range b.Columns() {
			cells = append(cells, c.ValueStr(i))
		}
		out = append(out, strings.Clone(strings.Join(cells, "|")))
	}
	return out
}

func TestQueries(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, q string
		want    []string
	}{
		{"three-part name", `SELECT count(*), sum(amount) FROM lake."default".sales`, []string{"4|35.5"}},
		{"two-part name", `SELECT id FROM "default".sales ORDER BY id DESC LIMIT 2`, []string{"4", "3"}},
		// default is a reserved word in DuckDB: unquoted it starts a
		// name only through qualifiers.go.
		{"default unquoted", `SELECT id FROM default.sales ORDER BY id DESC LIMIT 2`, []string{"4", "3"}},
		{"default spaced", `SELECT count(*) FROM default . sales`, []string{"4"}},
		{"default qualified", `SELECT count(*) FROM lake.default.sales`, []string{"4"}},
		{"default with a column", `SELECT sales.id FROM default.sales WHERE id = 2`, []string{"2"}},
		{"default in a join", `SELECT count(*) FROM default.sales s JOIN default.regions r USING (region) WHERE 'default.x' <> ''`,
			[]string{"3"}},
		{"default in a subquery", `SELECT (SELECT max(id) FROM default.sales), 'default.sales'`, []string{"4|default.sales"}},
		{"group by", `SELECT region, sum(qty) AS q FROM sales WHERE region IS NOT NULL GROUP BY region ORDER BY region`,
			[]string{"eu|4", "us|2"}},
		{"join", `SELECT s.id, r.manager FROM sales s JOIN regions r ON s.region = r.region WHERE s.amount > 6 ORDER BY 1`,
			[]string{"1|ann", "2|bob"}},
		{"self join", `SELECT a.id, b.id FROM sales a JOIN sales b ON a.id + 1 = b.id WHERE a.id < 2`, []string{"1|2"}},
		{"cte twice", `WITH e AS (SELECT * FROM sales WHERE region = 'eu') SELECT (SELECT count(*) FROM e), (SELECT max(id) FROM e)`,
			[]string{"2|3"}},
		// DuckDB prunes subquery columns the outer query does not use; the
		// stream must still line up with what it reads.
		{"pruned subquery", `SELECT count(*) FROM (SELECT id, amount FROM sales WHERE amount > 6)`, []string{"2"}},
		{"reordered columns", `SELECT qty, id FROM sales WHERE qty > 1 ORDER BY qty`, []string{"2|2", "3|3"}},
		{"implicit join", `SELECT count(*) FROM sales s, regions r WHERE s.region = r.region AND r.manager = 'ann'`, []string{"2"}},
		{"left join", `SELECT s.id, r.manager FROM sales s LEFT JOIN regions r USING (region) WHERE r.manager IS NULL`,
			[]string{"4|(null)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.rows(t, c.q, nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestPushdown(t *testing.T) {
	f := newFixture(t)
	got, err := f.rows(t, `SELECT id FROM sales WHERE region = 'eu' AND 2 < qty AND amount IN (5, 7.5) AND id IS NOT NULL`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "3" {
		t.Fatalf("got %q", got)
	}
	req := f.scan.reqs[len(f.scan.reqs)-1]
	if strings.Join(req.Columns, ",") != "id,region,amount,qty" {
		t.Errorf("columns %v", req.Columns)
	}
	want := map[string]catalogs.Filter{
		"region": {Column: "region", Op: catalogs.OpEq, Values: []any{"eu"}},
		"qty":    {Column: "qty", Op: catalogs.OpGt, Values: []any{int32(2)}},
		"amount": {Column: "amount", Op: catalogs.OpIn, Values: []any{float64(5), 7.5}},
		"id":     {Column: "id", Op: catalogs.OpNotNull},
	}
	if len(req.Filters) != len(want) {
		t.Fatalf("filters %+v", req.Filters)
	}
	for _, fl := range req.Filters {
		w := want[fl.Column]
		if w.Op != fl.Op || len(w.Values) != len(fl.Values) {
			t.Errorf("filter %+v, want %+v", fl, w)
		}
		for i := range w.Values {
			if w.Values[i] != fl.Values[i] {
				t.Errorf("filter %+v, want %+v", fl, w)
			}
		}
	}

	// Projection: only the columns the query names.
	if _, err := f.rows(t, `SELECT sum(qty) FROM sales`, nil); err != nil {
		t.Fatal(err)
	}
	if req := f.scan.reqs[len(f.scan.reqs)-1]; strings.Join(req.Columns, ",") != "qty" || len(req.Filters) != 0 {
		t.Errorf("request %+v", req)
	}
	// Under an outer join nothing is pushed.
	if _, err := f.rows(t, `SELECT * FROM sales s LEFT JOIN regions r USING (region) WHERE r.manager IS NULL`, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.scan.reqs[len(f.scan.reqs)-2:] {
		if len(r.Filters) != 0 {
			t.Errorf("filters pushed under an outer join: %+v", r.Filters)
		}
	}
}

// TestLimitPushdown checks which queries' LIMIT reaches the scan, and that
// a scan returning only that many rows still gives the right answer.
func TestLimitPushdown(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		q     string
		limit int64 // of every scan
		rows  int
	}{
		{`SELECT * FROM sales LIMIT 2`, 2, 2},
		{`SELECT id, upper(region), qty + 1, id::VARCHAR FROM sales LIMIT 2 OFFSET 1`, 3, 2},
		{`SELECT id FROM sales WHERE region = 'eu' AND qty IS NOT NULL LIMIT 1`, 1, 1},
		{`SELECT id FROM sales WHERE qty * 2 > 1 LIMIT 1`, 0, 1},
		{`SELECT id FROM sales ORDER BY id LIMIT 1`, 0, 1},
		{`SELECT DISTINCT region FROM sales LIMIT 2`, 0, 2},
		{`SELECT count(*) FROM sales LIMIT 1`, 0, 1},
		{`SELECT region, count(*) FROM sales GROUP BY region LIMIT 1`, 0, 1},
		{`SELECT unnest([id, id]) FROM sales LIMIT 3`, 0, 3},
		{`SELECT id, row_number() OVER () FROM sales LIMIT 1`, 0, 1},
		{`SELECT * FROM sales s JOIN regions r USING (region) LIMIT 1`, 0, 1},
		{`SELECT * FROM (SELECT * FROM sales) LIMIT 1`, 0, 1},
		{`SELECT id FROM sales UNION ALL SELECT id FROM sales LIMIT 5`, 0, 5},
		{`SELECT * FROM sales LIMIT 50%`, 0, 2},
		{`SELECT * FROM sales LIMIT 0`, 0, 0},
		{`SELECT (SELECT max(manager) FROM regions) FROM sales LIMIT 1`, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			f.scan.reqs = nil
			got, err := f.rows(t, c.q, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.rows {
				t.Errorf("%d rows, want %d: %q", len(got), c.rows, got)
			}
			if len(f.scan.reqs) == 0 {
				t.Fatal("no scan")
			}
			for _, r := range f.scan.reqs {
				if r.Limit != c.limit {
					t.Errorf("scan limit %d, want %d", r.Limit, c.limit)
				}
			}
		})
	}
}

func TestParams(t *testing.T) {
	f := newFixture(t)
	d, err := f.eng.Describe(context.Background(), `SELECT id, amount FROM sales WHERE region = ? AND qty >= ?`, f.resolve)
	if err != nil {
		t.Fatal(err)
	}
	if d.Schema.NumFields() != 2 || d.Params.NumFields() != 2 {
		t.Fatalf("description %v %v", d.Schema, d.Params)
	}
	if !arrow.TypeEqual(d.Params.Field(1).Type, arrow.PrimitiveTypes.Int32) {
		t.Errorf("param 2 type %s", d.Params.Field(1).Type)
	}
	p := batch(t, arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil),
		`[{"a":"eu","b":2}]`)
	got, err := f.rows(t, `SELECT id, amount FROM sales WHERE region = ? AND qty >= ?`, p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "3|5" {
		t.Fatalf("got %q", got)
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		q    string
		kind error
		msg  string
	}{
		{`SELEC 1`, catalogs.ErrInvalidArgument, "syntax error"},
		{`SELECT * FROM nope`, catalogs.ErrNotFound, "nope"},
		{`SELECT * FROM other.sales`, catalogs.ErrNotFound, "sales"},
		{`SELECT nope FROM sales`, catalogs.ErrInvalidArgument, "nope"},
		{`SELECT * FROM read_parquet('/etc/passwd')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM read_csv('/etc/passwd')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM read_text('/etc/passwd')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM glob('/etc/*')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM read_blob('/etc/hostname')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM parquet_metadata('/etc/passwd')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM query('SELECT * FROM read_csv(''/etc/passwd'')')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT getenv('HOME')`, catalogs.ErrInvalidArgument, "getenv"},
		// Quoting a reserved qualifier opens nothing.
		{`SELECT * FROM default.read_csv('/etc/passwd')`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM default.duckdb_settings()`, catalogs.ErrPermissionDenied, ""},
		{`SELECT * FROM default.nope`, catalogs.ErrNotFound, "nope"},
		{`SELECT * FROM order.sales`, catalogs.ErrNotFound, "sales"},
		{`SELECT * FROM default.sales; DROP TABLE sales`, catalogs.ErrInvalidArgument, "multiple statements"},
		{`SELECT 'default.sales' FROM`, catalogs.ErrInvalidArgument, "syntax error"},
		{`ATTACH '/tmp/x.db' AS x`, ErrUnsupported, "ATTACH"},
		{`COPY (SELECT 1) TO '/tmp/x.csv'`, ErrUnsupported, "COPY"},
		{`INSTALL httpfs`, ErrUnsupported, "INSTALL"},
		{`LOAD httpfs`, ErrUnsupported, "LOAD"},
		{`SET enable_external_access = true`, ErrUnsupported, "SET"},
		{`PRAGMA version`, ErrUnsupported, "PRAGMA"},
		{`DROP TABLE sales`, ErrUnsupported, "DROP"},
		{`UPDATE sales SET qty = 1`, ErrUnsupported, "UPDATE"},
		{`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r`, ErrUnsupported, "recursive"},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			_, err := f.rows(t, c.q, nil)
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.msg)) {
				t.Fatalf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

// TestLockedConfiguration checks the settings themselves, read on a
// connection of the engine's own (a query may not read them:
// current_setting is refused, TestServerRevealingRefused).
func TestLockedConfiguration(t *testing.T) {
	f := newFixture(t)
	c, err := f.eng.connect()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	got, err := c.queryString(`SELECT concat_ws('|', current_setting('enable_external_access'), current_setting('lock_configuration'),
		current_setting('autoload_known_extensions'), current_setting('autoinstall_known_extensions')) WHERE $1 <> ''`, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got != "false|true|false|false" {
		t.Fatalf("settings %q", got)
	}
}

func TestStreamsInBatches(t *testing.T) {
	f := newFixture(t)
	r, err := f.eng.Query(context.Background(), `SELECT i, i * 2 AS j FROM range(1000000) t(i)`, nil, f.resolve)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows, batches int64
	var largest int64
	for r.Next() {
		n := r.RecordBatch().NumRows()
		rows += n
		batches++
		largest = max(largest, n)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if rows != 1000000 || batches < 10 || largest > 100000 {
		t.Fatalf("rows %d in %d batches, largest %d", rows, batches, largest)
	}
}

func TestCancel(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := f.eng.Query(ctx, `SELECT i FROM range(100000000) t(i)`, nil, f.resolve)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	cancel()
	n := 0
	for r.Next() {
		n++
	}
	if r.Err() == nil {
		t.Fatalf("stream ended without error after cancel (%d more batches)", n)
	}
}

// TestMemoryBudget: a query over memory_limit that cannot spill (a list
// aggregate) fails with ErrResourceExhausted and a message that says what
// to raise, and the engine keeps serving.
func TestMemoryBudget(t *testing.T) {
	tight, err := New(Options{MemoryLimit: "24MB", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tight.Close()
	f := &fixture{eng: tight, resolve: func(_, _, n string) (Table, error) {
		return Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", n)
	}}
	_, err = f.rows(t, `SELECT list(md5(i::VARCHAR)) IS NOT NULL FROM range(3000000) t(i)`, nil)
	if !errors.Is(err, ErrResourceExhausted) || !strings.Contains(err.Error(), "engine.memory_limit") {
		t.Fatalf("over budget: %v", err)
	}
	if got, err := f.rows(t, `SELECT 42`, nil); err != nil || got[0] != "42" {
		t.Fatalf("engine after an out-of-memory query: %v %v", got, err)
	}
}

// TestClassifyLostStreamingError: DuckDB's "closed pending query result",
// which a fetch reports when a worker failed mid-stream and the cause was
// dropped, is not blamed on the caller.
func TestClassifyLostStreamingError(t *testing.T) {
	err := classify(duck.ErrorTypeInvalidInput, "Invalid Input Error: Attempting to execute an unsuccessful or closed pending query result")
	if errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "engine.memory_limit") {
		t.Fatalf("classified as %v", err)
	}
	if err := classify(duck.ErrorTypeInvalidInput, "Invalid Input Error: bad date"); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("invalid input: %v", err)
	}
}

// TestRenderOutlivesTheBatch: the rows render gives stay as they were
// after their batch is released and its buffers are reused. A string
// cell is a view of the batch's data buffer, and strings.Join of one cell
// is that cell: rendered rows of one string column read from a pooled
// buffer freed and rewritten by the next query (TestDirectLastBatchOfAUnit
// then saw another batch's offsets as SELECT tag's strings).
func TestRenderOutlivesTheBatch(t *testing.T) {
	pool := newBufferPool(defaultPoolBytes)
	schema := arrow.NewSchema([]arrow.Field{{Name: "tag", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(pool, schema)
	defer b.Release()
	for range 1000 {
		b.Field(0).(*array.StringBuilder).Append("abcdefgh") // 8000 bytes: a pooled size
	}
	rec := b.NewRecordBatch()
	rows := render(rec)
	rec.Release()
	reused := pool.allocate(8 << 10) // the data buffer, back from the pool
	for i := range reused {
		reused[i] = 'x'
	}
	defer pool.Free(reused)
	for i, r := range rows {
		if r != "abcdefgh" {
			t.Fatalf("row %d rendered %q, reads %q once its batch's buffers are reused", i, "abcdefgh", r)
		}
	}
}
