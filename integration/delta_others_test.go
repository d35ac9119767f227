package integration

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// deltaFixtures are the tables delta-rs (deltalake 1.6.6, write_deltalake)
// wrote with integration/delta/gen_fixtures.py.
const deltaFixtures = "../codec/delta/testdata/tables"

// TestDeltaGatewayReadsOthers: the gateway answers SQL over tables other
// writers made exactly as delta-rs reads them, value by value: delta-rs's
// own tables (every type with nested ones and NaN, hostile partition
// values, a checkpoint and a delete, a full and a predicate overwrite,
// column mapping) and two of them after DuckDB's delta extension
// appended to them (make delta-check; skipped without the venvs).
func TestDeltaGatewayReadsOthers(t *testing.T) {
	requireEngine(t)
	py := deltaPython(t)
	if py == "" {
		t.Skip("no deltalake venv (make delta-check makes one): nothing to compare with")
	}
	g := startGateway(t, `
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`)
	ns := filepath.Join(g.dataDir, "delta", "default")
	tables := []string{"appends", "partitioned", "checkpoint", "replace", "colmap"}
	for _, name := range tables {
		if err := os.CopyFS(filepath.Join(ns, "rs_"+name), os.DirFS(filepath.Join(deltaFixtures, name))); err != nil {
			t.Fatal(err)
		}
	}
	var duck []string
	if ddb := deltaDuckDB(); ddb != "" {
		// DuckDB appends to copies of two of them: rows of its own with
		// nulls, NaN and infinities. (The delta extension 1.5.5 fails to
		// write a map value, "Failed to cast value: Type VARCHAR with value
		// '0' can't be cast to the destination type MAP(VARCHAR, BIGINT)",
		// so its maps are null; and to append to a partitioned table at
		// all: "INTERNAL Error: DeltaInsert::Sink expects a single row".)
		for name, insert := range map[string]string{
			"appends": `INSERT INTO d SELECT 100 + id, i8, i16, NULL, f32 * -1, CASE WHEN id % 2 = 0 THEN 'NaN'::DOUBLE ELSE '-inf'::DOUBLE END,
			  NOT b, s || ' ducked', bin, d + 1, ts, ntz, dec * -1, st, arr, NULL FROM d`,
			"checkpoint": `INSERT INTO d VALUES (500, 'duck=1/2%3 é'), (501, NULL), (502, '')`,
		} {
			dir := filepath.Join(ns, "duck_"+name)
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(deltaFixtures, name))); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(ddb, "delta/write_duckdb.py", dir, insert).CombinedOutput()
			if err != nil {
				t.Fatalf("DuckDB append to %s: %v\n%s", name, err, out)
			}
			duck = append(duck, "duck_"+name)
		}
	} else {
		t.Logf("no %s and no .venv-delta-duckdb: no DuckDB-written table", deltaDuckDBEnv)
	}
	// What the gateway must answer is what the writer itself reads: delta-rs
	// for its tables, DuckDB for the ones it appended to (delta-rs 1.6.6
	// cannot open those: DuckDB writes the map column's nullCount as
	// {"key": n, "value": n}, and delta-rs fails with "whilst decoding field
	// 'm': expected primitive") and for the column-mapped one, which
	// delta-rs 1.6.6 reads as nulls only (DuckDB and Delta Kernel read its
	// values).
	byReader := map[string][]string{}
	for _, name := range tables {
		r := "deltalake"
		if name == "colmap" {
			r = "duckdb-delta"
		}
		byReader[r] = append(byReader[r], "rs_"+name)
	}
	byReader["duckdb-delta"] = append(byReader["duckdb-delta"], duck...)
	if deltaDuckDB() == "" {
		delete(byReader, "duckdb-delta")
	}
	var names []string
	var want []deltaReaderOut
	for _, r := range []deltaReader{{name: "deltalake", argv: []string{py, "delta/read_table.py"}}, {name: "duckdb-delta", argv: []string{deltaDuckDB(), "delta/read_duckdb.py"}}} {
		var specs []string
		for _, name := range byReader[r.name] {
			specs = append(specs, filepath.Join(ns, name))
		}
		if len(specs) > 0 {
			names, want = append(names, byReader[r.name]...), append(want, r.read(t, specs)...)
		}
	}
	c, ctx := g.flightClient(t), context.Background()
	for k, name := range names {
		info, err := c.Execute(ctx, "SELECT * FROM dl.default."+name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := renderBatches(t, collect(t, ctx, c, info))
		slices.SortFunc(got.Rows, func(a, b []any) int {
			x, _ := strconv.ParseInt(a[0].(string), 10, 64)
			y, _ := strconv.ParseInt(b[0].(string), 10, 64)
			return int(x - y)
		})
		if !slices.Equal(got.Columns, want[k].Columns) {
			t.Errorf("%s: the gateway's columns %v, deltalake's %v", name, got.Columns, want[k].Columns)
			continue
		}
		if len(want[k].Rows) == 0 {
			t.Fatalf("%s: deltalake reads no rows", name)
		}
		compareDeltaRows(t, "gateway SQL over "+name, got.Columns, got, want[k].Rows)
	}
}

// deltaDuckDB is the Python of FLIGHTGW_DELTA_DUCKDB or of the worktree's
// .venv-delta-duckdb; "" when neither.
func deltaDuckDB() string {
	if py := os.Getenv(deltaDuckDBEnv); py != "" {
		return py
	}
	if _, err := os.Stat("../.venv-delta-duckdb/bin/python"); err == nil {
		return "../.venv-delta-duckdb/bin/python"
	}
	return ""
}

// renderBatches renders SQL results as integration/delta/render.py does.
func renderBatches(t *testing.T, bs []arrow.RecordBatch) deltaReaderOut {
	t.Helper()
	var out deltaReaderOut
	if len(bs) == 0 {
		return out
	}
	for _, f := range bs[0].Schema().Fields() {
		out.Columns = append(out.Columns, f.Name)
	}
	for _, b := range bs {
		for i := range int(b.NumRows()) {
			row := make([]any, b.NumCols())
			for j, col := range b.Columns() {
				row[j] = renderArrow(t, col, i)
			}
			out.Rows = append(out.Rows, row)
		}
	}
	return out
}

// renderArrow is render.py's rendering of value i of a.
func renderArrow(t *testing.T, a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i))
	case *array.Int8:
		return strconv.Itoa(int(c.Value(i)))
	case *array.Int16:
		return strconv.Itoa(int(c.Value(i)))
	case *array.Int32:
		return strconv.Itoa(int(c.Value(i)))
	case *array.Int64:
		return strconv.FormatInt(c.Value(i), 10)
	case *array.Float32:
		return pyFloat(float64(c.Value(i)))
	case *array.Float64:
		return pyFloat(c.Value(i))
	case *array.String:
		return c.Value(i)
	case *array.LargeString:
		return c.Value(i)
	case *array.Binary:
		return fmt.Sprintf("%x", c.Value(i))
	case *array.LargeBinary:
		return fmt.Sprintf("%x", c.Value(i))
	case *array.Date32:
		return c.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return time.Unix(0, int64(c.Value(i))*int64(unit.Multiplier())).UTC().Format("2006-01-02 15:04:05.000000")
	case *array.Decimal128:
		return c.Value(i).ToString(c.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		m := map[string]any{}
		for k := range c.NumField() {
			m[st.Field(k).Name] = renderArrow(t, c.Field(k), i)
		}
		return m
	case *array.Map:
		lo, hi := c.ValueOffsets(i)
		var pairs []any
		for k := lo; k < hi; k++ {
			pairs = append(pairs, []any{renderArrow(t, c.Keys(), int(k)), renderArrow(t, c.Items(), int(k))})
		}
		slices.SortFunc(pairs, func(x, y any) int {
			return cmpString(fmt.Sprint(x.([]any)[0]), fmt.Sprint(y.([]any)[0]))
		})
		if pairs == nil {
			pairs = []any{}
		}
		return pairs
	case array.ListLike:
		lo, hi := c.ValueOffsets(i)
		l := []any{}
		for k := lo; k < hi; k++ {
			l = append(l, renderArrow(t, c.ListValues(), int(k)))
		}
		return l
	}
	t.Fatalf("no rendering for %s", a.DataType())
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pyFloat spells f as Python's repr does for the values of these tables
// (and NaN and the infinities as Java does, render.py's rule).
func pyFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) || f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return javaDouble(f)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
