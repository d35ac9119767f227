package iceberg_test

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// every is wide (types_test.go) plus the types wide lacks and floats at
// every depth: each Arrow type the backend stores, nested ones included.
var every = arrow.NewSchema(append(wide.Fields(),
	arrow.Field{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	arrow.Field{Name: "fx", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}, Nullable: true},
	arrow.Field{Name: "pts", Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "w", Type: arrow.PrimitiveTypes.Int32, Nullable: true})), Nullable: true},
	arrow.Field{Name: "scores", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float32), Nullable: true},
), nil)

// everyRows: 999 in a float column stands for NaN (JSON has none).
const everyRows = `[
 {"i8": -8, "i16": 300, "i32": 7, "i64": 9000000000, "u8": 200, "u32": 4000000000, "f32": 1.5, "f64": 2.25,
  "s": "a", "ls": "large", "bin": "aGk=", "ok": true, "dec": "12.34", "d": "2024-02-29",
  "ts_s": "2024-01-02T03:04:05", "ts_ms": "2024-01-02T03:04:05.123", "ts_us": "2024-01-02T03:04:05.123456",
  "ts_ns": "2024-01-02T03:04:05.123456789", "tstz": "2024-01-02T03:04:05Z", "tstz_ny": "2024-01-02T03:04:05.5Z",
  "tags": [1, 2, 3], "pt": {"x": 1.0, "label": "p"}, "attrs": [{"key": "k", "value": 1}],
  "t": 11045123456, "fx": "AAECAw==", "pts": [{"v": 0.5, "w": 1}, {"v": 999, "w": null}, null],
  "scores": [{"key": "a", "value": 999}, {"key": "b", "value": -1.5}]},
 {"i8": null, "i16": null, "i32": 8, "i64": null, "u8": null, "u32": null, "f32": null, "f64": null,
  "s": null, "ls": null, "bin": null, "ok": null, "dec": null, "d": null,
  "ts_s": null, "ts_ms": null, "ts_us": null, "ts_ns": null, "tstz": null, "tstz_ny": null,
  "tags": null, "pt": null, "attrs": null, "t": null, "fx": null, "pts": null, "scores": null},
 {"i8": 1, "i16": -2, "i32": 9, "i64": -3, "u8": 4, "u32": 5, "f32": 999, "f64": 999,
  "s": "", "ls": "z", "bin": "", "ok": false, "dec": "-0.01", "d": "1970-01-01",
  "ts_s": "1969-12-31T23:59:59", "ts_ms": null, "ts_us": "2262-04-11T00:00:00", "ts_ns": null,
  "tstz": "2000-01-01T00:00:00Z", "tstz_ny": null,
  "tags": [], "pt": {"x": 999, "label": null}, "attrs": [], "t": 0, "fx": "/////w==", "pts": [],
  "scores": []}
]`

// javaRows reads the table whose metadata file is at metadata with
// Iceberg Java's generic reader (testdata/java/Read.java), rows sorted by
// i32; nil (the check skipped, with a log line) unless
// FLIGHTGW_ICEBERG_JAVA is set (make iceberg-pyiceberg-check sets it:
// Maven and a JVM take seconds) and java and mvn are there.
func javaRows(t *testing.T, metadata string) []map[string]any {
	t.Helper()
	cp := iceberg.JavaClasspath(t)
	if cp == "" {
		return nil
	}
	var got struct {
		Rows []map[string]any `json:"rows"`
	}
	out := iceberg.JavaRead(t, cp, metadata)[0]
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("Iceberg Java output %s: %v", out, err)
	}
	rows := got.Rows
	slices.SortFunc(rows, func(a, b map[string]any) int { return cmp.Compare(a["i32"].(float64), b["i32"].(float64)) })
	return rows
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// nanify turns every 999 of a float array, at any depth, into NaN.
func nanify(a arrow.Array) {
	switch c := a.(type) {
	case *array.Float64:
		for i, v := range c.Float64Values() {
			if v == 999 {
				c.Float64Values()[i] = math.NaN()
			}
		}
	case *array.Float32:
		for i, v := range c.Float32Values() {
			if v == 999 {
				c.Float32Values()[i] = float32(math.NaN())
			}
		}
	case *array.Struct:
		for i := range c.NumField() {
			nanify(c.Field(i))
		}
	case *array.Map:
		nanify(c.Keys())
		nanify(c.Items())
	case *array.List:
		nanify(c.ListValues())
	}
}

// writeJSONRows writes rows (a JSON array of sc's rows; 999 in a float
// column is NaN: nanify) to table id through a write stream (the lane
// writer) and commits them.
func writeJSONRows(t *testing.T, p *iceberg.Provider, id catalogs.TableIdent, sc *arrow.Schema, rows string) {
	t.Helper()
	ctx := context.Background()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, c := range rec.Columns() {
		nanify(c)
	}
	s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(ctx, id, id.Name, rs); err != nil {
		t.Fatal(err)
	}
}

// readersLake returns the Python with pyiceberg and duckdb (or skips the
// test), and an embedded lake in a temporary directory, closed when the
// test ends.
func readersLake(t *testing.T) (py, dir string, p *iceberg.Provider) {
	t.Helper()
	py = pyiceberg(t)
	if err := exec.Command(py, "-c", "import duckdb").Run(); err != nil {
		t.Skipf("no duckdb module in %s: %v", py, err)
	}
	dir = t.TempDir()
	p, err := iceberg.OpenEmbedded(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return py, dir, p
}

// TestReadersAgreeOnEveryType writes every stored type, with nulls, NaNs
// and nested values, through a write stream (the lane writer), commits,
// and has pyiceberg (a table scan), DuckDB and pyarrow (the same data
// files) and, with java and mvn, Iceberg Java (IcebergGenerics) read it
// back: all must read the same rows, and the manifest must carry bounds,
// null counts and NaN counts.
func TestReadersAgreeOnEveryType(t *testing.T) {
	py, dir, p := readersLake(t)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "every"}
	// ts_ns holds nanoseconds the v2 table's microseconds cannot keep: the
	// readers are to agree on the truncated value.
	if _, err := p.CreateTable(ctx, id, every, map[string]string{iceberg.PropTruncateNanos: "true"}); err != nil {
		t.Fatal(err)
	}
	writeJSONRows(t, p, id, every, everyRows)

	var got struct {
		PyIceberg []map[string]any `json:"pyiceberg"`
		DuckDB    []map[string]any `json:"duckdb"`
		PyArrow   []map[string]any `json:"pyarrow"`
		IDs       map[string]int   `json:"ids"`
		Metadata  string           `json:"metadata_location"`
		Files     []struct {
			Rows      int64            `json:"rows"`
			NaN       map[string]int64 `json:"nan"`
			Null      map[string]int64 `json:"null"`
			Lower     []int            `json:"lower"`
			Upper     []int            `json:"upper"`
			F64Bounds []any            `json:"f64_bounds"`
		} `json:"files"`
	}
	runScript(t, py, &got, "readers_check.py", dir, "default.every", "i32")
	if len(got.PyIceberg) != 3 {
		t.Fatalf("pyiceberg reads %d rows, want 3", len(got.PyIceberg))
	}
	// pyarrow reads the files as written; DuckDB and pyiceberg must agree
	// with it. pyiceberg 0.12's scan alone reads a null list of structs
	// as an empty list (so it does on files iceberg-go's WriteRecords
	// writes too): that one difference is let through.
	for i, want := range got.PyArrow {
		for _, r := range []struct {
			name string
			rows []map[string]any
		}{{"duckdb", got.DuckDB}, {"pyiceberg", got.PyIceberg}} {
			if i >= len(r.rows) {
				t.Errorf("%s reads %d rows, pyarrow %d", r.name, len(r.rows), len(got.PyArrow))
				continue
			}
			have := r.rows[i]
			if r.name == "pyiceberg" && want["pts"] == nil && fmtJSON(have["pts"]) == "[]" {
				have = maps.Clone(have)
				have["pts"] = nil
			}
			if a, b := fmtJSON(want), fmtJSON(have); a != b {
				t.Errorf("row %d:\npyarrow   %s\n%-9s %s", i, a, r.name, b)
			}
		}
	}
	if java := javaRows(t, got.Metadata); java != nil {
		for i, want := range got.PyArrow {
			if i >= len(java) {
				t.Errorf("Iceberg Java reads %d rows, pyarrow %d", len(java), len(got.PyArrow))
				break
			}
			if a, b := fmtJSON(want), fmtJSON(java[i]); a != b {
				t.Errorf("row %d:\npyarrow      %s\nIceberg Java %s", i, a, b)
			}
		}
	}
	first := got.PyIceberg[0]
	for col, want := range map[string]any{"i8": -8.0, "u32": 4e9, "dec": "12.34", "t": "03:04:05.123456", "fx": "00010203",
		"ts_ns": "2024-01-02T03:04:05.123456", "tstz_ny": "2024-01-02T03:04:05.500000+00:00"} {
		if first[col] != want {
			t.Errorf("pyiceberg reads %s = %v (%T), want %v", col, first[col], first[col], want)
		}
	}
	if got.PyIceberg[2]["f64"] != "NaN" {
		t.Errorf("pyiceberg reads f64 = %v in the NaN row", got.PyIceberg[2]["f64"])
	}
	if len(got.Files) != 1 {
		t.Fatalf("%d data files, want 1", len(got.Files))
	}
	f := got.Files[0]
	key := func(name string) string { return strconv.Itoa(got.IDs[name]) }
	for name, want := range map[string]int64{"f64": 1, "f32": 1, "pt.x": 1} {
		if n, ok := f.NaN[key(name)]; !ok || n != want {
			t.Errorf("nan count of %s (id %s) = %d (set %v), want %d; all: %v", name, key(name), n, ok, want, f.NaN)
		}
	}
	for name, want := range map[string]int64{"i8": 1, "i32": 0, "s": 1, "tstz": 1, "ts_ms": 2, "fx": 1} {
		if n := f.Null[key(name)]; n != want {
			t.Errorf("null count of %s = %d, want %d", name, n, want)
		}
	}
	has := func(ids []int, name string) bool {
		for _, i := range ids {
			if strconv.Itoa(i) == key(name) {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"i8", "i32", "i64", "f32", "f64", "s", "bin", "ok", "dec", "d", "ts_us", "tstz", "t", "fx"} {
		// s and bin hold "": iceberg-go's footer metrics drop an empty
		// lower bound (so WriteRecords's files lack it too).
		if !has(f.Upper, name) || (!has(f.Lower, name) && name != "s" && name != "bin") {
			t.Errorf("column %s has no lower or upper bound (lower %v, upper %v)", name, f.Lower, f.Upper)
		}
	}
	if len(f.F64Bounds) != 2 || f.F64Bounds[0] != 2.25 || f.F64Bounds[1] != 2.25 {
		t.Errorf("f64 bounds %v, want 2.25..2.25 (NaN and null left out)", f.F64Bounds)
	}
}
