package iceberg_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// flatTable has a column of each flat type that pqwrite.FlatWriter writes.
var flatTable = arrow.NewSchema([]arrow.Field{
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "tstz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
}, nil)

// TestReadersAgreeOnFlatFiles writes 300 rows of distinct values (so no
// column keeps a dictionary and the file is FlatWriter's, which the test
// checks), nulls one row in seven and a NaN, and has pyiceberg, DuckDB,
// pyarrow and, with java and mvn, Iceberg Java read them: the rows the
// gateway was given, and bounds and null counts in the manifest.
func TestReadersAgreeOnFlatFiles(t *testing.T) {
	py, dir, p := readersLake(t)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "flat"}
	if _, err := p.CreateTable(ctx, id, flatTable, nil); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var rows []string
	want := make([]map[string]any, n)
	for i := range n {
		i32 := int64(i)*7919 - 1_000_000
		if i%7 == 3 {
			rows = append(rows, fmt.Sprintf(`{"i32": %d}`, i32))
			want[i] = map[string]any{"i32": float64(i32), "id": nil, "f32": nil, "f64": nil, "b": nil, "s": nil, "bin": nil, "d": nil, "tstz": nil, "ts": nil}
			continue
		}
		f64, f64JSON := float64(i)*1.5+0.125, any(float64(i)*1.5+0.125)
		if i == 5 {
			f64, f64JSON = 999, "NaN" // nanify below
		}
		day := time.Date(1960, 2, 29, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 97*i)
		tstz := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC).Add(time.Duration(i) * (time.Hour + time.Microsecond))
		ts := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC).Add(time.Duration(i*1001) * time.Microsecond)
		s := fmt.Sprintf("s%d é ✓ %q", i, strings.Repeat("x", i%13))
		bin := []byte{byte(i), 0, 255, byte(i >> 8)}
		rows = append(rows, fmt.Sprintf(`{"i32": %d, "id": %d, "f32": %g, "f64": %g, "b": %t, "s": %s, "bin": %q, "d": %q, "tstz": %q, "ts": %q}`,
			i32, 1000+i, float32(i)/4, f64, i%2 == 0, fmtJSON(s), base64.StdEncoding.EncodeToString(bin), day.Format("2006-01-02"),
			tstz.Format("2006-01-02T15:04:05.000000Z"), ts.Format("2006-01-02T15:04:05.000000")))
		want[i] = map[string]any{"i32": float64(i32), "id": float64(1000 + i), "f32": float64(float32(i) / 4), "f64": f64JSON,
			"b": i%2 == 0, "s": s, "bin": hex.EncodeToString(bin), "d": day.Format("2006-01-02"),
			"tstz": tstz.Format("2006-01-02T15:04:05.000000+00:00"), "ts": ts.Format("2006-01-02T15:04:05.000000")}
		if tstz.Nanosecond() == 0 {
			want[i]["tstz"] = tstz.Format("2006-01-02T15:04:05+00:00")
		}
		if ts.Nanosecond() == 0 {
			want[i]["ts"] = ts.Format("2006-01-02T15:04:05")
		}
	}
	writeJSONRows(t, p, id, flatTable, "["+strings.Join(rows, ",")+"]")

	var got struct {
		PyIceberg []map[string]any `json:"pyiceberg"`
		DuckDB    []map[string]any `json:"duckdb"`
		PyArrow   []map[string]any `json:"pyarrow"`
		Metadata  string           `json:"metadata_location"`
		Files     []struct {
			Path  string           `json:"path"`
			Rows  int64            `json:"rows"`
			Null  map[string]int64 `json:"null"`
			Lower []int            `json:"lower"`
			Upper []int            `json:"upper"`
		} `json:"files"`
	}
	runScript(t, py, &got, "readers_check.py", dir, "default.flat", "i32")
	if len(got.Files) != 1 || got.Files[0].Rows != n {
		t.Fatalf("data files %+v, want one of %d rows", got.Files, n)
	}
	if !catalogtest.FlatWritten(t, strings.TrimPrefix(got.Files[0].Path, "file://")) {
		t.Fatalf("%s was not written by FlatWriter", got.Files[0].Path)
	}
	if len(got.Files[0].Lower) != len(flatTable.Fields()) || len(got.Files[0].Upper) != len(flatTable.Fields()) {
		t.Errorf("bounds of %v and %v, want every column's", got.Files[0].Lower, got.Files[0].Upper)
	}
	java := javaRows(t, got.Metadata)
	for i, w := range want {
		for _, r := range []struct {
			name string
			rows []map[string]any
		}{{"pyarrow", got.PyArrow}, {"duckdb", got.DuckDB}, {"pyiceberg", got.PyIceberg}, {"Iceberg Java", java}} {
			if r.rows == nil && r.name == "Iceberg Java" {
				continue
			}
			if i >= len(r.rows) {
				t.Fatalf("%s reads %d rows, want %d", r.name, len(r.rows), n)
			}
			have := r.rows[i]
			if r.name == "Iceberg Java" {
				// Read.java renders floats as Java does and
				// instants its own way: compared with pyarrow's.
				w = got.PyArrow[i]
			}
			if a, b := fmtJSON(w), fmtJSON(have); a != b {
				t.Errorf("row %d:\nwant %s\n%-4s %s", i, a, r.name, b)
			}
		}
	}
}

// TestReadersAgreeOnRawPages writes 40,000 rows whose k (52 random bits)
// and bin (16 random bytes) zstd cannot shrink by an eighth, in pages of
// 64 KiB (the table's write.parquet.page-size-bytes): pqwrite.FlatWriter
// stores all but the first of each column's pages in raw zstd blocks.
// pyiceberg, DuckDB, pyarrow and Iceberg Java read every row.
func TestReadersAgreeOnRawPages(t *testing.T) {
	py, dir, p := readersLake(t)
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "raw"}
	if _, err := p.CreateTable(ctx, id, sc, map[string]string{"write.parquet.page-size-bytes": "65536"}); err != nil {
		t.Fatal(err)
	}
	const n = 40_000
	r := rand.New(rand.NewPCG(11, 12))
	var rows []string
	want := make([]map[string]any, n)
	for i := range n {
		k := int64(r.Uint64() >> 12)
		bin := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r.Uint64()), r.Uint64())
		rows = append(rows, fmt.Sprintf(`{"i32": %d, "k": %d, "bin": %q}`, i, k, base64.StdEncoding.EncodeToString(bin)))
		want[i] = map[string]any{"i32": float64(i), "k": float64(k), "bin": hex.EncodeToString(bin)}
	}
	writeJSONRows(t, p, id, sc, "["+strings.Join(rows, ",")+"]")

	var got struct {
		PyIceberg []map[string]any `json:"pyiceberg"`
		DuckDB    []map[string]any `json:"duckdb"`
		PyArrow   []map[string]any `json:"pyarrow"`
		Metadata  string           `json:"metadata_location"`
		Files     []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	runScript(t, py, &got, "readers_check.py", dir, "default.raw", "i32")
	if len(got.Files) != 1 {
		t.Fatalf("data files %+v, want one", got.Files)
	}
	path := strings.TrimPrefix(got.Files[0].Path, "file://")
	if !catalogtest.FlatWritten(t, path) {
		t.Fatalf("%s was not written by FlatWriter", path)
	}
	// 320 KB of k in five pages, four raw: 98% of its pages, where zstd
	// makes it 93%; bin likewise (plain, its lengths the only repeats).
	for _, col := range []string{"k", "bin"} {
		if c := catalogtest.Chunk(t, path, col); float64(c.Compressed) < 0.96*float64(c.Uncompressed) {
			t.Errorf("column %s: %d bytes of %d uncompressed, want its pages stored raw", col, c.Compressed, c.Uncompressed)
		}
	}
	java := javaRows(t, got.Metadata)
	for _, rd := range []struct {
		name string
		rows []map[string]any
	}{{"pyarrow", got.PyArrow}, {"duckdb", got.DuckDB}, {"pyiceberg", got.PyIceberg}, {"Iceberg Java", java}} {
		if rd.rows == nil && rd.name == "Iceberg Java" {
			continue
		}
		if len(rd.rows) != n {
			t.Fatalf("%s reads %d rows, want %d", rd.name, len(rd.rows), n)
		}
		bad := 0
		for i, w := range want {
			if a, b := fmtJSON(w), fmtJSON(rd.rows[i]); a != b && bad < 3 {
				bad++
				t.Errorf("row %d:\nwant %s\n%-4s %s", i, a, rd.name, b)
			}
		}
	}
}

// A page size the table sets (write.parquet.page-size-bytes) is the
// writer's, not the one the gateway picks from the target file size when
// the table sets none.
func TestTablePageSizeKept(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	p, err := iceberg.OpenEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var rows []string
	for i := range 20_000 {
		rows = append(rows, fmt.Sprintf(`{"k": %d}`, int64(i)*7_777_777_777))
	}
	for name, want := range map[string]struct {
		opts     map[string]string
		min, max int
	}{
		"small_pages": {map[string]string{"write.parquet.page-size-bytes": "4096"}, 30, 60}, // 160 KB of k
		"default":     {nil, 1, 2},
	} {
		id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: name}
		if _, err := p.CreateTable(ctx, id, sc, want.opts); err != nil {
			t.Fatal(err)
		}
		writeJSONRows(t, p, id, sc, "["+strings.Join(rows, ",")+"]")
		files, _ := filepath.Glob(filepath.Join(dir, "warehouse", "default.db", name, "data", "*.parquet"))
		if len(files) != 1 {
			t.Fatalf("%s: data files %v, want one", name, files)
		}
		rd, err := file.OpenParquetFile(files[0], false)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := rd.RowGroup(0).GetColumnPageReader(0)
		if err != nil {
			t.Fatal(err)
		}
		pages := 0
		for pr.Next() {
			pages++
		}
		rd.Close()
		if pages < want.min || pages > want.max {
			t.Errorf("%s: %d pages, want %d to %d", name, pages, want.min, want.max)
		}
	}
}
