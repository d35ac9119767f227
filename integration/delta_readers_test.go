package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// Where the independent Delta readers are (mk/delta.mk sets them; without
// them the tests look in the worktree and skip a reader that is not there).
const (
	// deltaDuckDBEnv names the Python with DuckDB 1.5.5 and its delta
	// extension (.venv-delta-duckdb).
	deltaDuckDBEnv = "FLIGHTGW_DELTA_DUCKDB"
	// deltaKernelEnv names the file holding the classpath of Delta Kernel
	// Java 4.4.0 (integration/delta/java/target/classpath.txt); unset, the
	// kernel does not read.
	deltaKernelEnv = "FLIGHTGW_DELTA_KERNEL"
)

// everySchema has a column of every Delta type the gateway writes, nested
// ones included.
var everySchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 6}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "arr", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
}, nil)

// flatSchema is everySchema's flat columns: in batches of more than 64
// distinct values, the files of such a table are written by
// pqwrite.FlatWriter, not pqarrow (no column keeps a dictionary).
var flatSchema = arrow.NewSchema(slices.DeleteFunc(slices.Clone(everySchema.Fields()), func(f arrow.Field) bool {
	switch f.Type.ID() {
	case arrow.INT8, arrow.INT16, arrow.DECIMAL128, arrow.STRUCT, arrow.LIST, arrow.MAP:
		return true
	}
	return false
}), nil)

// flatRow is everyRow's row i in flatSchema's columns, with NaN and the
// infinities rarer in f64 (one row in 20, 40 and 40), so that its values
// are distinct enough to be written without a dictionary.
func flatRow(i int) (string, []any) {
	js, all := everyRow(i)
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		panic(err)
	}
	if m["f64"] != nil {
		f64 := float64(i)*1.5 + 0.125
		m["f64"] = json.Number(javaDouble(f64))
		switch {
		case i%20 == 1:
			f64, m["f64"] = math.NaN(), "NaN"
		case i%40 == 2:
			f64, m["f64"] = math.Inf(1), "Inf"
		case i%40 == 5:
			f64, m["f64"] = math.Inf(-1), "-Inf"
		}
		all[everySchema.FieldIndices("f64")[0]] = javaDouble(f64)
	}
	var cols []string
	var want []any
	for _, f := range flatSchema.Fields() {
		v, _ := json.Marshal(m[f.Name])
		cols = append(cols, fmt.Sprintf("%q: %s", f.Name, v))
		want = append(want, all[everySchema.FieldIndices(f.Name)[0]])
	}
	return "{" + strings.Join(cols, ", ") + "}", want
}

// javaDouble spells f as Java's Double.toString does for the values of
// these tests (render.py's rule for every reader).
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == math.Trunc(f):
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// everyRow is row i of everySchema as ingest JSON and as every reader
// renders it (integration/delta/render.py): one row in seven is null in
// every optional column; NaN and both infinities, dates and timestamps
// before 1970, 38-digit decimals, empty lists, null struct fields and map
// values are among the others.
func everyRow(i int) (string, []any) {
	if i%7 == 3 {
		cols := []string{fmt.Sprintf(`"id": %d`, i)}
		want := []any{strconv.Itoa(i)}
		for _, f := range everySchema.Fields()[1:] {
			cols = append(cols, fmt.Sprintf("%q: null", f.Name))
			want = append(want, nil)
		}
		return "{" + strings.Join(cols, ", ") + "}", want
	}
	f32 := float64(i)/4 - 1
	f64 := float64(i)*1.5 + 0.125
	f64JSON := javaDouble(f64)
	switch i % 10 {
	case 1:
		f64, f64JSON = math.NaN(), `"NaN"`
	case 2:
		f64, f64JSON = math.Inf(1), `"Inf"`
	case 5:
		f64, f64JSON = math.Inf(-1), `"-Inf"`
	}
	s := fmt.Sprintf(`s%d é ✓ "q" \ `, i)
	bin := []byte{byte(i), 0, 255, byte(i * 7)}
	day := time.Date(1960, 2, 29, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1000*i)
	ts := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC).Add(time.Duration(i) * (time.Hour + time.Second + time.Microsecond))
	ntz := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC).Add(time.Duration(i*1001) * time.Microsecond)
	cents := i*12345 - 50000
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	dec := fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
	big := fmt.Sprintf("12345678901234567890123456789%03d.%06d", i, i*37)
	y, yWant := jsonString(fmt.Sprintf("y%d", i)), any(fmt.Sprintf("y%d", i))
	if i%3 == 0 {
		y, yWant = "null", nil
	}
	arr, arrWant := fmt.Sprintf("[%d, null, %d]", i, i+1), []any{strconv.Itoa(i), nil, strconv.Itoa(i + 1)}
	if i%4 == 1 {
		arr, arrWant = "[]", []any{}
	}
	const tsForm = "2006-01-02T15:04:05.000000"
	const wantTS = "2006-01-02 15:04:05.000000"
	row := fmt.Sprintf(`{"id": %d, "i8": %d, "i16": %d, "i32": %d, "f32": %s, "f64": %s, "b": %t, "s": %s, "bin": %q,
		"d": %q, "ts": %q, "ntz": %q, "dec": %q, "big": %q, "st": {"x": %d, "y": %s}, "arr": %s,
		"m": [{"key": "k", "value": %d}, {"key": "a", "value": null}]}`,
		i, i%100-50, i*300-1000, i*70000, javaDouble(f32), f64JSON, i%2 == 0, jsonString(s), base64.StdEncoding.EncodeToString(bin),
		day.Format("2006-01-02"), ts.Format(tsForm)+"Z", ntz.Format(tsForm), dec, big, -i, y, arr, i)
	want := []any{strconv.Itoa(i), strconv.Itoa(i%100 - 50), strconv.Itoa(i*300 - 1000), strconv.Itoa(i * 70000),
		javaDouble(f32), javaDouble(f64), strconv.FormatBool(i%2 == 0), s, fmt.Sprintf("%x", bin),
		day.Format("2006-01-02"), ts.Format(wantTS), ntz.Format(wantTS), dec, big,
		map[string]any{"x": strconv.Itoa(-i), "y": yWant}, arrWant,
		[]any{[]any{"a", nil}, []any{"k", strconv.Itoa(i)}}}
	return row, want
}

// rawSchema's k and bin are nearly random: zstd saves less than an eighth
// of their pages, which pqwrite.FlatWriter then stores in raw zstd blocks
// (pqwrite/rawzstd.go). bin's distinct values are written
// DELTA_LENGTH_BYTE_ARRAY.
var rawSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// rawRows is how many rows the raw table has: k's pages (256 KiB) fill
// four times, so that three of them are stored raw after the first is
// judged.
const rawRows = 100_000

// rawRow is row i of rawSchema: k 52 random bits (zstd saves about 7% of
// its pages), bin 16 random bytes.
func rawRow(i int) (string, []any) {
	k := int64(splitmix(uint64(i)) >> 12)
	bin := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, splitmix(uint64(i)+1<<40)), splitmix(uint64(i)+2<<40))
	return fmt.Sprintf(`{"id": %d, "k": %d, "bin": %q}`, i, k, base64.StdEncoding.EncodeToString(bin)),
		[]any{strconv.Itoa(i), strconv.FormatInt(k, 10), fmt.Sprintf("%x", bin)}
}

// splitmix is SplitMix64's output for x: a well-mixed function of it.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// hostileValues are partition values that need escaping in directory
// names and URIs; "" is null, as the protocol reads an empty partition
// value.
var hostileValues = []*string{nil, ptr(""), ptr("a=b/c%d é"), ptr("x%2Fy"), ptr("with space"), ptr(`quote'"`),
	ptr("colon:#?"), ptr("ünïcödé ✓"), ptr("100%"), ptr("star*^[]{}"), ptr(`back\slash`), ptr("tab\there"), ptr("=")}

var hostileSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "q", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// hostileRow is row i of hostileSchema, partitioned by p and q.
func hostileRow(i int) (string, []any) {
	p := hostileValues[i%len(hostileValues)]
	pJSON, pWant := "null", any(nil)
	if p != nil {
		pJSON = jsonString(*p)
		if *p != "" {
			pWant = *p
		}
	}
	q, qWant := strconv.Itoa(i%3), any(strconv.Itoa(i%3))
	if i%4 == 0 {
		q, qWant = "null", nil
	}
	return fmt.Sprintf(`{"id": %d, "p": %s, "q": %s, "v": "v%d"}`, i, pJSON, q, i), []any{strconv.Itoa(i), pWant, qWant, fmt.Sprintf("v%d", i)}
}

// deltaVersionRows is which rows (from, n ranges) a table holds at a version.
type deltaVersionRows [][2]int

// TestDeltaReaders has the gateway write two tables (one of every type
// with nulls, NaN and infinities; one partitioned by two columns with
// hostile values, null and empty) through create, append, replace and
// append again, and a third through twelve appends, on local files, and
// every independent reader there read each version of them (time travel)
// value by value: delta-rs (deltalake 1.6.6), DuckDB 1.5.5 with its delta
// extension, Delta Kernel Java 4.4.0 (make delta-check installs all three).
func TestDeltaReaders(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`)
	checkDeltaReaders(t, g, filepath.Join(g.dataDir, "delta", "default"), deltaReaders(t))
}

// TestDeltaReadersS3 is TestDeltaReaders on S3 (gofakes3 on memory, as
// integration/s3server serves it), read by delta-rs and by DuckDB (its
// httpfs extension from the wheel too); Delta Kernel's default engine
// would need hadoop-aws and the AWS SDK bundle, which are not installed.
func TestDeltaReadersS3(t *testing.T) {
	requireEngine(t)
	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithAutoBucket(false)).Server())
	t.Cleanup(srv.Close)
	g := startGateway(t, strings.ReplaceAll(`
catalogs:
  - name: dl
    type: delta
    properties:
      warehouse: "s3://lake/wh"
      create-namespaces: default
      s3.endpoint: "${S3}"
      s3.region: us-east-1
      s3.access-key-id: test
      s3.secret-access-key: test-secret
      s3.force-virtual-addressing: "false"
default_catalog: dl
`, "${S3}", srv.URL))
	var readers []deltaReader
	for _, r := range deltaReaders(t) {
		if r.name != "delta-kernel" {
			r.env = []string{"AWS_ENDPOINT_URL=" + srv.URL, "AWS_ALLOW_HTTP=true", "AWS_REGION=us-east-1",
				"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test-secret"}
			readers = append(readers, r)
		}
	}
	checkDeltaReaders(t, g, "s3://lake/wh/default", readers)
}

// checkDeltaReaders writes the tables of TestDeltaReaders through g into
// its catalog dl, whose namespace default is at ns, and has readers read them.
func checkDeltaReaders(t *testing.T, g *gateway, ns string, readers []deltaReader) {
	c, ctx := g.flightClient(t), context.Background()
	type table struct {
		name     string
		schema   *arrow.Schema
		row      func(int) (string, []any)
		options  map[string]string
		protocol []int // reader, writer
		// versions are the rows after each ingest: of the last range, an
		// append when it extends the one before, else a replace. The first
		// ingest creates the table: a staged create, version 0 holding its
		// rows; a create the backend does not stage (column mapping, row
		// tracking: StagesCreate) is an empty version 0 and the rows at 1.
		versions []deltaVersionRows
	}
	// byVersion is what a table holds at each version of its log.
	byVersion := func(tb table) []deltaVersionRows {
		if tb.options["delta.columnMapping.mode"] != "" || tb.options["delta.enableRowTracking"] == "true" {
			return append([]deltaVersionRows{nil}, tb.versions...)
		}
		return tb.versions
	}
	tables := []table{
		{"every", everySchema, everyRow, nil, []int{3, 7}, []deltaVersionRows{{{0, 10}}, {{0, 10}, {10, 5}}, {{20, 6}}, {{20, 6}, {26, 4}}}},
		{"hostile", hostileSchema, hostileRow, map[string]string{"partition": "p,q"}, []int{1, 7},
			[]deltaVersionRows{{{0, 26}}, {{0, 26}, {26, 13}}, {{100, 13}}, {{100, 13}, {113, 7}}}},
		// Column mapping (delta.columnMapping.mode at the create): physical
		// names col-<uuid> and field ids in the files, partition values and
		// stats by physical name; the readers see the logical names.
		{"every_cm", everySchema, everyRow, map[string]string{"delta.columnMapping.mode": "id", "delta.checkpointInterval": "2"}, []int{3, 7},
			[]deltaVersionRows{{{0, 10}}, {{0, 10}, {10, 5}}, {{20, 6}}, {{20, 6}, {26, 4}}}},
		// In-commit timestamps (writer feature only: reader 1), with a
		// checkpoint every two versions.
		{"ict", hostileSchema, hostileRow, map[string]string{"partition": "p,q", "delta.enableInCommitTimestamps": "true", "delta.checkpointInterval": "2"}, []int{1, 7},
			[]deltaVersionRows{{{0, 26}}, {{0, 26}, {26, 13}}, {{100, 13}}, {{100, 13}, {113, 7}}}},
		// Row tracking (writer features rowTracking and domainMetadata), a
		// checkpoint every two versions.
		{"rowtrack", everySchema, everyRow, map[string]string{"delta.enableRowTracking": "true", "delta.checkpointInterval": "2"}, []int{3, 7},
			[]deltaVersionRows{{{0, 10}}, {{0, 10}, {10, 5}}, {{20, 6}}, {{20, 6}, {26, 4}}}},
		{"hostile_cm", hostileSchema, hostileRow, map[string]string{"partition": "p,q", "delta.columnMapping.mode": "name", "delta.checkpointInterval": "2"}, []int{3, 7},
			[]deltaVersionRows{{{0, 26}}, {{0, 26}, {26, 13}}, {{100, 13}}, {{100, 13}, {113, 7}}}},
		// Batches large enough for the writer's encoding sample
		// (pqwrite.DeltaPackedColumns): id and ntz, in narrow steps, are
		// written DELTA_BINARY_PACKED.
		{"packed", everySchema, everyRow, nil, []int{3, 7}, []deltaVersionRows{{{0, 110}}}}, // i16 overflows past 112
		// Flat columns of many distinct values: files of FlatWriter
		// (catalogtest.FlatWritten below), with and without column mapping.
		{"flat", flatSchema, flatRow, nil, []int{3, 7}, []deltaVersionRows{{{0, 200}}, {{0, 200}, {200, 100}}, {{300, 100}}}},
		{"flat_cm", flatSchema, flatRow, map[string]string{"delta.columnMapping.mode": "id"}, []int{3, 7},
			[]deltaVersionRows{{{0, 200}}, {{0, 200}, {200, 100}}, {{300, 100}}}},
		// Pages zstd cannot shrink, stored in raw zstd blocks (checked below).
		{"raw", rawSchema, rawRow, nil, []int{1, 7}, []deltaVersionRows{{{0, rawRows}}}},
	}
	// Twelve appends: past delta.checkpointInterval (10 when unset), so the
	// readers read from a checkpoint once the gateway writes one.
	many := table{name: "many", schema: everySchema, row: everyRow, protocol: []int{3, 7}}
	var rows deltaVersionRows
	for k := range 12 {
		rows = append(slices.Clone(rows), [2]int{40 + 2*k, 2})
		many.versions = append(many.versions, rows)
	}
	tables = append(tables, many)
	var specs []string
	type check struct {
		table   table
		version int // -1: the latest
	}
	var checks []check
	for _, tb := range tables {
		batch := func(from, n int) arrow.RecordBatch {
			return batchFromJSON(t, tb.schema, func(i int) string { s, _ := tb.row(from + i); return s }, n)
		}
		for v, rows := range tb.versions {
			var o *flightsql.ExecuteIngestOpts
			switch {
			case v == 0:
				o = modeCreate(tb.name)
				o.Options = tb.options
			case rows[0] != tb.versions[v-1][0]:
				o = ingestOpts(tb.name, flightsql.TableDefinitionOptionsTableNotExistOptionFail, flightsql.TableDefinitionOptionsTableExistsOptionReplace)
			default:
				o = modeAppend(tb.name)
			}
			o.Catalog = ptr("dl")
			last := rows[len(rows)-1]
			if _, err := c.ExecuteIngest(ctx, reader(t, batch(last[0], last[1])), o); err != nil {
				t.Fatalf("%s version %d: %v", tb.name, v, err)
			}
		}
		dir := ns + "/" + tb.name
		if strings.HasPrefix(tb.name, "flat") && !strings.Contains(ns, "://") {
			files, _ := filepath.Glob(dir + "/*.parquet")
			if len(files) == 0 {
				t.Fatalf("%s: no data files in %s", tb.name, dir)
			}
			for _, f := range files {
				if !catalogtest.FlatWritten(t, f) {
					t.Errorf("%s: %s was not written by FlatWriter", tb.name, f)
				}
				if tb.name == "flat" {
					// s and bin of distinct values, delta-length.
					for _, col := range []string{"s", "bin"} {
						if e := catalogtest.Chunk(t, f, col).Encodings; !slices.Contains(e, parquet.Encodings.DeltaLengthByteArray) {
							t.Errorf("%s: %s, column %s: encodings %v, want DELTA_LENGTH_BYTE_ARRAY", tb.name, f, col, e)
						}
					}
				}
			}
		}
		if tb.name == "raw" && !strings.Contains(ns, "://") {
			files, _ := filepath.Glob(dir + "/*.parquet")
			for _, f := range files {
				// Raw blocks but for the first page, which is judged:
				// the chunk 98% of its pages, where zstd makes it 93%.
				if c := catalogtest.Chunk(t, f, "k"); float64(c.Compressed) < 0.96*float64(c.Uncompressed) {
					t.Errorf("raw: %s, column k: %d bytes of %d uncompressed, want its pages stored raw", f, c.Compressed, c.Uncompressed)
				}
				if e := catalogtest.Chunk(t, f, "bin").Encodings; !slices.Contains(e, parquet.Encodings.DeltaLengthByteArray) {
					t.Errorf("raw: %s, column bin: encodings %v, want DELTA_LENGTH_BYTE_ARRAY", f, e)
				}
			}
			if len(files) == 0 {
				t.Fatalf("raw: no data files in %s", dir)
			}
		}
		for v := range len(byVersion(tb)) {
			if tb.name == "many" && v > 1 && v < 9 {
				continue // like the versions around them; the JVM takes a second a snapshot here
			}
			specs = append(specs, fmt.Sprintf("%s@%d", dir, v))
			checks = append(checks, check{tb, v})
		}
		specs = append(specs, dir)
		checks = append(checks, check{tb, -1})
	}
	for _, tb := range []string{"hostile", "hostile_cm"} {
		if got := queryOne(t, g, "SELECT count(*), count(p), count(DISTINCT p), count(q) FROM dl.default."+tb); got != "20|16|11|15" {
			t.Errorf("%s by SQL: %s, want 20|16|11|15", tb, got)
		}
	}
	if got := queryOne(t, g, "SELECT count(*), count(st.y), sum(arr[1]), count(m) FROM dl.default.every_cm"); got != queryOne(t, g, "SELECT count(*), count(st.y), sum(arr[1]), count(m) FROM dl.default.every") {
		t.Errorf("every_cm by SQL: %s, unlike every", got)
	}

	if len(readers) == 0 {
		t.Skip("no Delta reader installed (make delta-check installs them)")
	}
	for _, r := range readers {
		got := r.read(t, specs)
		for k, ck := range checks {
			at := ck.version
			if at < 0 {
				at = len(byVersion(ck.table)) - 1
			}
			what := fmt.Sprintf("%s: %s at version %d", r.name, ck.table.name, ck.version)
			if got[k].Version != nil && *got[k].Version != int64(at) {
				t.Errorf("%s: reads version %d", what, *got[k].Version)
			}
			if got[k].Protocol != nil && !slices.Equal(got[k].Protocol, ck.table.protocol) {
				t.Errorf("%s: protocol %v, want %v", what, got[k].Protocol, ck.table.protocol)
			}
			var want [][]any
			for _, rg := range byVersion(ck.table)[at] {
				for i := rg[0]; i < rg[0]+rg[1]; i++ {
					_, w := ck.table.row(i)
					want = append(want, w)
				}
			}
			cols := fieldNames(ck.table.schema)
			if r.name == "duckdb-delta" && ck.table.options["delta.columnMapping.mode"] != "" && ck.table.options["partition"] != "" {
				// DuckDB's delta extension 1.5.5 misreads the partition columns
				// of a column-mapped table (duckdb/duckdb-delta#50, #343: on
				// Spark's tables too); delta-rs and Delta Kernel read them.
				part := strings.Split(ck.table.options["partition"], ",")
				cols = slices.DeleteFunc(cols, func(c string) bool { return slices.Contains(part, c) })
				want = dropColumns(fieldNames(ck.table.schema), want, part)
			}
			compareDeltaRows(t, what, cols, got[k], want)
		}
	}
}

// compareDeltaRows checks a reader's rows against want, column by column
// by name, each value by its JSON rendering.
func compareDeltaRows(t *testing.T, what string, columns []string, got deltaReaderOut, want [][]any) {
	t.Helper()
	if len(got.Rows) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got.Rows), len(want))
		return
	}
	for j, name := range columns {
		k := slices.Index(got.Columns, name)
		if k < 0 {
			t.Errorf("%s: columns %v, without %s", what, got.Columns, name)
			return
		}
		bad := 0
		for i, r := range got.Rows {
			g, _ := json.Marshal(r[k])
			w, _ := json.Marshal(want[i][j])
			if !bytes.Equal(g, w) && bad < 3 {
				bad++
				t.Errorf("%s: row %d column %s = %s, want %s", what, i, name, g, w)
			}
		}
	}
}

// deltaReaderOut is one line of what the reader programs print.
type deltaReaderOut struct {
	Version  *int64
	Protocol []int
	Columns  []string
	Rows     [][]any
}

// deltaReader is one independent reader: a command that takes
// <dir>[@version] arguments and prints one deltaReaderOut line for each.
type deltaReader struct {
	name string
	argv []string
	env  []string // beside the test's environment
}

func (r deltaReader) read(t *testing.T, specs []string) []deltaReaderOut {
	t.Helper()
	cmd := exec.Command(r.argv[0], append(r.argv[1:], specs...)...)
	cmd.Env = append(os.Environ(), r.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", r.name, err, stderr.String())
	}
	t.Logf("%s read %d snapshots in %s", r.name, len(specs), time.Since(start).Round(time.Millisecond))
	var got []deltaReaderOut
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var o deltaReaderOut
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("%s: %v: %s", r.name, err, sc.Bytes())
		}
		got = append(got, o)
	}
	if len(got) != len(specs) {
		t.Fatalf("%s: %d answers for %d snapshots\n%s", r.name, len(got), len(specs), stderr.String())
	}
	return got
}

// deltaReaders are the readers installed: each from its variable when set
// (a broken one then fails the test), else, for the Python ones, from the
// worktree's venv when there.
func deltaReaders(t *testing.T) []deltaReader {
	var rs []deltaReader
	if py := deltaPython(t); py != "" {
		rs = append(rs, deltaReader{name: "deltalake", argv: []string{py, "delta/read_table.py"}})
	}
	if py := os.Getenv(deltaDuckDBEnv); py != "" {
		rs = append(rs, deltaReader{name: "duckdb-delta", argv: []string{py, "delta/read_duckdb.py"}})
	} else if _, err := os.Stat("../.venv-delta-duckdb/bin/python"); err == nil {
		rs = append(rs, deltaReader{name: "duckdb-delta", argv: []string{"../.venv-delta-duckdb/bin/python", "delta/read_duckdb.py"}})
	} else {
		t.Logf("no %s and no .venv-delta-duckdb: DuckDB's reading is not checked", deltaDuckDBEnv)
	}
	// Only when asked (make delta-check): a JVM compiling Read.java takes
	// seconds, too many to pay again in every go test run.
	cpFile := os.Getenv(deltaKernelEnv)
	if cpFile == "" {
		t.Logf("no %s: Delta Kernel's reading is not checked", deltaKernelEnv)
		return rs
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	return append(rs, deltaReader{name: "delta-kernel", argv: []string{"java", "-cp", strings.TrimSpace(string(cp)), "delta/java/Read.java"}})
}

// dropColumns removes the columns drop from rows of columns.
func dropColumns(columns []string, rows [][]any, drop []string) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		for j, c := range columns {
			if !slices.Contains(drop, c) {
				out[i] = append(out[i], r[j])
			}
		}
	}
	return out
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}
