package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// The readers other than pyiceberg, run by make iceberg-pyiceberg-check:
// Iceberg Java (testdata/java/Read.java, FLIGHTGW_ICEBERG_JAVA) and
// DuckDB's iceberg extension (testdata/duckdb_iceberg.py in the venv of
// FLIGHTGW_ICEBERG_DUCKDB, else ../../.venv-delta-duckdb: the extension
// loads only into its own DuckDB release).

var (
	javaCPOnce sync.Once
	javaCP     string
	javaCPErr  error
)

// JavaClasspath is Iceberg Java's classpath (testdata/java/pom.xml),
// resolved by Maven once for the whole test binary; "" (the check
// skipped, with a log line) unless FLIGHTGW_ICEBERG_JAVA is set and java
// and mvn are there. The package's external tests use it too.
func JavaClasspath(t testing.TB) string {
	t.Helper()
	if os.Getenv("FLIGHTGW_ICEBERG_JAVA") == "" {
		t.Log("FLIGHTGW_ICEBERG_JAVA unset: Iceberg Java's reading is not checked")
		return ""
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("no %s: Iceberg Java's reading is not checked", tool)
			return ""
		}
	}
	javaCPOnce.Do(func() {
		dir, err := os.MkdirTemp("", "iceberg-java-cp")
		if err != nil {
			javaCPErr = err
			return
		}
		defer os.RemoveAll(dir)
		cp := filepath.Join(dir, "classpath.txt")
		mvn := exec.Command("mvn", "-q", "-B", "-f", filepath.Join("testdata", "java", "pom.xml"), "dependency:build-classpath", "-Dmdep.outputFile="+cp)
		if out, err := mvn.CombinedOutput(); err != nil {
			javaCPErr = fmt.Errorf("mvn: %v\n%s", err, out)
			return
		}
		b, err := os.ReadFile(cp)
		javaCP, javaCPErr = strings.TrimSpace(string(b)), err
	})
	if javaCPErr != nil {
		t.Fatal(javaCPErr)
	}
	return javaCP
}

// JavaRead runs Read.java once over every argument
// (<metadata.json>[@filter]...) and returns its one JSON object per
// argument.
func JavaRead(t testing.TB, classpath string, args ...string) []json.RawMessage {
	t.Helper()
	cmd := exec.Command("java", append([]string{"-cp", classpath, filepath.Join("testdata", "java", "Read.java")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Iceberg Java: %v\n%s", err, stderr.String())
	}
	var res []json.RawMessage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		res = append(res, json.RawMessage(line))
	}
	if len(res) != len(args) {
		t.Fatalf("Iceberg Java printed %d objects for %d tables:\n%s", len(res), len(args), out)
	}
	return res
}

// duckDBIceberg returns the Python of the venv with DuckDB's iceberg
// extension, or "" (with a log line).
func duckDBIceberg(t *testing.T) string {
	py := os.Getenv("FLIGHTGW_ICEBERG_DUCKDB")
	if py == "" {
		py = filepath.Join("..", "..", ".venv-delta-duckdb", "bin", "python")
	}
	if err := exec.Command(py, "-c", "import duckdb_extension_iceberg").Run(); err != nil {
		t.Logf("no DuckDB iceberg extension at %s (set FLIGHTGW_ICEBERG_DUCKDB or run make iceberg-pyiceberg-check): DuckDB's reading is not checked", py)
		return ""
	}
	return py
}

// optTable is a table created with options, the rows written to it (each
// rendered as the readers render it), and the filters each reader runs.
type optTable struct {
	name    string
	schema  *arrow.Schema
	opts    map[string]string
	batches [][]map[string]any // rendered rows, one commit each
	filters []optFilter
	maxOpen int      // the writers' write.max-open-files while writing it (0: the default)
	race    bool     // the last commit loses its first compare-and-swap to another gateway's commit of the one before
	duckNo  string   // DuckDB's refusal of the table, if it refuses it
	spec    []string // as Iceberg Java prints it
	sortID  int
	sort    []string
	version int
}

// optFilter is one predicate, spelled for Java (Read.java's filter) and
// for DuckDB (SQL), and the ids it keeps.
type optFilter struct {
	java, sql string
	keep      func(row map[string]any) bool
}

// isoUTC spells an instant as Read.java and duckdb_iceberg.py do:
// Python's isoformat, nanoseconds only when there are any.
func isoUTC(t time.Time, zone bool) string {
	layout := "2006-01-02T15:04:05"
	switch {
	case t.Nanosecond()%1000 != 0:
		layout += ".000000000"
	case t.Nanosecond() != 0:
		layout += ".000000"
	}
	s := t.UTC().Format(layout)
	if zone {
		s += "+00:00"
	}
	return s
}

// partsTable is partitioned by every transform, each on its own column
// (Iceberg Java refuses two time transforms of one column), over the
// values where transforms go wrong: negative numbers (bucket, truncate's
// floor), strings of several bytes a character (truncate counts
// characters) and of the characters a partition path escapes (identity),
// and instants and dates before 1970 (the time transforms floor).
func partsTable() optTable {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cat", Type: arrow.BinaryTypes.String},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "ts_d", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "ts_h", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	row := func(i int) map[string]any {
		j := i % 3
		return map[string]any{
			"id":   float64(i - 10),
			"cat":  []string{"a", "b/c=d e%"}[i%2],
			"s":    fmt.Sprintf("%sé%03d", []string{"p", "ü"}[i%2], i),
			"n":    float64(i*7 - 100),
			"ts":   isoUTC(time.Date(1969+j, 6, 1, 12, 0, 0, 0, time.UTC), true),
			"d":    time.Date(1969, time.Month(12+j), 15, 0, 0, 0, 0, time.UTC).Format(time.DateOnly),
			"ts_d": isoUTC(time.Date(1969, 12, 31+j, 6, 30, 0, 0, time.UTC), false),
			"ts_h": isoUTC(time.Date(1969, 12, 31, 23+j, 15, 0, 123000, time.UTC), true),
		}
	}
	var b1, b2 []map[string]any
	for i := range 24 {
		b1 = append(b1, row(i))
		b2 = append(b2, row(24+i))
	}
	return optTable{
		name: "parts", schema: sc,
		opts:    map[string]string{OptPartition: "cat, bucket(4, id), truncate(2, s), truncate(10, n), year(ts), month(d), day(ts_d), hour(ts_h)"},
		batches: [][]map[string]any{b1, b2},
		// Fewer open files than a batch has partitions: the gateway's own
		// partition keys (partcount.go) regroup most rows.
		maxOpen: 3,
		spec: []string{"cat=identity(cat)", "id_bucket=bucket[4](id)", "s_trunc=truncate[2](s)", "n_trunc=truncate[10](n)",
			"ts_year=year(ts)", "d_month=month(d)", "ts_d_day=day(ts_d)", "ts_h_hour=hour(ts_h)"},
		sort: []string{}, version: 2,
		filters: []optFilter{
			{"cat=a", "cat = 'a'", func(r map[string]any) bool { return r["cat"] == "a" }},
			{"cat=b/c=d e%", "cat = 'b/c=d e%'", func(r map[string]any) bool { return r["cat"] == "b/c=d e%" }},
			{"id=-5", "id = -5", func(r map[string]any) bool { return r["id"] == -5.0 }},
			{"s^=üé", "starts_with(s, 'üé')", func(r map[string]any) bool { return strings.HasPrefix(r["s"].(string), "üé") }},
			{"n<-15", "n < -15", func(r map[string]any) bool { return r["n"].(float64) < -15 }},
			{"ts>=1970-01-01T00:00:00+00:00", "ts >= TIMESTAMPTZ '1970-01-01 00:00:00+00'", func(r map[string]any) bool { return r["ts"].(string) >= "1970" }},
			{"d<1970-01-01", "d < DATE '1970-01-01'", func(r map[string]any) bool { return r["d"].(string) < "1970-01-01" }},
			{"ts_d>=1970-01-01T00:00:00", "ts_d >= TIMESTAMP '1970-01-01 00:00:00'", func(r map[string]any) bool { return r["ts_d"].(string) >= "1970-01-01" }},
			{"ts_h<1970-01-01T00:00:00+00:00", "ts_h < TIMESTAMPTZ '1970-01-01 00:00:00+00'", func(r map[string]any) bool { return r["ts_h"].(string) < "1970-01-01" }},
		},
	}
}

// sortedTable is the issue's own example: partition by day and bucket,
// sorted by id descending; each commit's ids arrive shuffled.
func sortedTable() optTable {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var batches [][]map[string]any
	for b := range 2 {
		var rows []map[string]any
		for k := range 24 {
			i := b*24 + (k*7)%24 // a permutation of the commit's ids
			var name any = fmt.Sprintf("e%d", i)
			if i%5 == 0 {
				name = nil
			}
			rows = append(rows, map[string]any{"id": float64(i), "ts": isoUTC(start.Add(time.Duration(i)*3*time.Hour), true), "name": name})
		}
		batches = append(batches, rows)
	}
	return optTable{
		name: "sorted", schema: sc,
		opts:    map[string]string{OptPartition: "day(ts), bucket(8, id)", OptSort: "id desc"},
		batches: batches,
		spec:    []string{"ts_day=day(ts)", "id_bucket=bucket[8](id)"},
		sortID:  1, sort: []string{"id DESC NULLS LAST"}, version: 2,
		filters: []optFilter{
			{"ts>=2026-01-03T00:00:00+00:00", "ts >= TIMESTAMPTZ '2026-01-03 00:00:00+00'", func(r map[string]any) bool { return r["ts"].(string) >= "2026-01-03" }},
			{"id=5", "id = 5", func(r map[string]any) bool { return r["id"] == 5.0 }},
		},
	}
}

// v3Table is format version 3 with nanosecond timestamps, partitioned by
// the day of one, written a file open at a time; its second append loses a commit race (the test does
// that), so it is written in three commits: [1 2], the racer's [3], [4 5 6].
func v3Table() optTable {
	var batches [][]map[string]any
	for _, ids := range [][]int{{1, 2}, {3}, {4, 5, 6}} {
		var rows []map[string]any
		for _, i := range ids {
			// tz over three days, digits below the microsecond in both.
			tz := fmt.Sprintf("2024-01-0%dT03:04:05.123456%03d+00:00", 1+i%3, 100+i)
			rows = append(rows, map[string]any{"id": float64(i), "ts": nsValue(i), "tz": tz})
		}
		batches = append(batches, rows)
	}
	return optTable{
		name: "v3ns", schema: nsSchema,
		opts:    map[string]string{OptFormatVersion: "3", OptPartition: "day(tz)"},
		batches: batches, race: true, maxOpen: 1,
		// DuckDB 1.5.5's iceberg extension has no nanosecond types.
		duckNo: "Unrecognized primitive type: timestamptz_ns",
		spec:   []string{"tz_day=day(tz)"},
		sort:   []string{}, version: 3,
		filters: []optFilter{
			{"tz>=2024-01-03T00:00:00+00:00", "tz >= TIMESTAMPTZ '2024-01-03 00:00:00+00'", func(r map[string]any) bool { return r["tz"].(string) >= "2024-01-03" }},
			{"tz<2024-01-02T00:00:00+00:00", "tz < TIMESTAMPTZ '2024-01-02 00:00:00+00'", func(r map[string]any) bool { return r["tz"].(string) < "2024-01-02" }},
			// The nanoseconds decide between ids 1 (…101) and 4 (…104),
			// both of day 2.
			{"tz>=2024-01-02T03:04:05.123456102+00:00", "tz >= TIMESTAMPTZ '2024-01-02 03:04:05.123456102+00'", func(r map[string]any) bool { return r["tz"].(string) >= "2024-01-02T03:04:05.123456102" }},
		},
	}
}

// v3usTable is format version 3 without nanoseconds (what DuckDB reads
// of v3), bucketed, with the same raced appends.
func v3usTable() optTable {
	var batches [][]map[string]any
	for _, ids := range [][]int{{1, 2, 3, 4}, {5}, {6, 7, 8}} {
		var rows []map[string]any
		for _, i := range ids {
			rows = append(rows, map[string]any{"id": float64(i), "s": fmt.Sprintf("r%d", i)})
		}
		batches = append(batches, rows)
	}
	return optTable{
		name: "v3us",
		schema: arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		}, nil),
		opts:    map[string]string{OptFormatVersion: "3", OptPartition: "bucket(2, id)"},
		batches: batches, race: true,
		spec: []string{"id_bucket=bucket[2](id)"},
		sort: []string{}, version: 3,
		filters: []optFilter{
			{"id=6", "id = 6", func(r map[string]any) bool { return r["id"] == 6.0 }},
		},
	}
}

// writeRendered writes rendered rows as one batch and commits them.
func writeRendered(t *testing.T, p *Provider, id catalogs.TableIdent, sc *arrow.Schema, rows []map[string]any) {
	t.Helper()
	b, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	// The rendered instants carry "+00:00"; arrow's JSON reader takes "Z".
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(strings.ReplaceAll(string(b), "+00:00", "Z")))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	r, err := p.WriteBatch(context.Background(), id, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(context.Background(), id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
}

// javaView is what Read.java prints for a table.
type javaView struct {
	FormatVersion int              `json:"format_version"`
	Spec          []string         `json:"spec"`
	SortOrderID   int              `json:"sort_order_id"`
	Sort          []string         `json:"sort"`
	Rows          []map[string]any `json:"rows"`
	Files         []struct {
		Path          string  `json:"path"`
		Rows          int64   `json:"rows"`
		RowsRead      int64   `json:"rows_read"`
		Partition     []any   `json:"partition"`
		RowPartitions [][]any `json:"row_partitions"`
		SortOrderID   *int    `json:"sort_order_id"`
		FirstRowID    *int64  `json:"first_row_id"`
		DataSeq       int64   `json:"data_sequence_number"`
		Sorted        bool    `json:"sorted"`
	} `json:"files"`
	Snapshots []struct {
		Seq        int64  `json:"sequence_number"`
		FirstRowID *int64 `json:"first_row_id"`
		AddedRows  *int64 `json:"added_rows"`
	} `json:"snapshots"`
	NextRowID int64            `json:"next_row_id"`
	Lineage   []map[string]any `json:"lineage"`
	Filters   []struct {
		Filter       string           `json:"filter"`
		FilesPlanned int              `json:"files_planned"`
		Rows         []map[string]any `json:"rows"`
		WhereError   string           `json:"where_error"`
	} `json:"filters"`
}

// duckView is what duckdb_iceberg.py prints for a table: the rows, or
// DuckDB's refusal.
type duckView struct {
	Error   string             `json:"error"`
	Rows    []map[string]any   `json:"rows"`
	Filters [][]map[string]any `json:"filters"`
}

// sameRows compares rows as sets, keyed by id.
func sameRows(t *testing.T, who string, got, want []map[string]any) {
	t.Helper()
	key := func(rows []map[string]any) []string {
		var out []string
		for _, r := range rows {
			b, _ := json.Marshal(r) // maps marshal with sorted keys
			out = append(out, string(b))
		}
		slices.Sort(out)
		return out
	}
	g, w := key(got), key(want)
	if !slices.Equal(g, w) {
		t.Errorf("%s reads %d rows, want %d:\n got %v\nwant %v", who, len(g), len(w), g, w)
	}
}

// TestOtherReadersReadTableOptions: Iceberg Java 1.10 and DuckDB's
// iceberg extension read the tables the gateway creates with table
// options — partitioned by every transform, partitioned and sorted, and
// format version 3 with nanosecond timestamps and an append that lost a
// commit race — with the rows written, the spec and sort order asked for
// (Java), each file holding one partition and sorted (as Java computes
// partitions and compares rows), Java's row-lineage metadata columns
// matching the files' first_row_id, and filters on partition columns
// planning fewer files and keeping the right rows; and pyiceberg
// (FLIGHTGW_PYTHON) reads the same rows by the same metadata files.
func TestOtherReadersReadTableOptions(t *testing.T) {
	cp := JavaClasspath(t)
	duck := duckDBIceberg(t)
	if cp == "" && duck == "" {
		t.Skip("neither Iceberg Java nor DuckDB's iceberg extension is set up (make iceberg-pyiceberg-check)")
	}
	p, props := openLake(t)
	ctx := context.Background()
	other, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	tables := []optTable{partsTable(), sortedTable(), v3Table(), v3usTable()}
	var javaArgs []string
	var duckIn []map[string]any
	for _, tb := range tables {
		id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: tb.name}
		if _, err := p.CreateTable(ctx, id, tb.schema, tb.opts); err != nil {
			t.Fatalf("create %s: %v", tb.name, err)
		}
		if tb.maxOpen > 0 {
			p.cfg.maxOpenFiles, other.cfg.maxOpenFiles = tb.maxOpen, tb.maxOpen
		}
		last := len(tb.batches) - 1
		for k, rows := range tb.batches {
			switch {
			case tb.race && k == last-1:
				// The racer's, below.
			case tb.race && k == last:
				// This append loses its first compare-and-swap to
				// another gateway's append of the batch before.
				cat := p.cat
				p.cat = &racingCatalog{Catalog: cat, before: func() { writeRendered(t, other, id, tb.schema, tb.batches[k-1]) }}
				writeRendered(t, p, id, tb.schema, rows)
				p.cat = cat
			default:
				writeRendered(t, p, id, tb.schema, rows)
			}
		}
		p.cfg.maxOpenFiles, other.cfg.maxOpenFiles = DefaultMaxOpenFiles, DefaultMaxOpenFiles
		if tb.version >= 3 {
			checkLineage(t, p, id, tb.name)
		}
		checkGatewayReads(t, p, id, tb)
		tbl, err := p.load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		loc := tbl.MetadataLocation()
		arg := loc
		var sqls []string
		for _, f := range tb.filters {
			arg += "@" + f.java
			sqls = append(sqls, f.sql)
		}
		javaArgs = append(javaArgs, arg)
		duckIn = append(duckIn, map[string]any{"metadata": loc, "where": sqls})
	}

	if py := os.Getenv("FLIGHTGW_PYTHON"); py != "" {
		// pyiceberg, the reader the other tests use, over the same files.
		var locs []string
		for _, d := range duckIn {
			locs = append(locs, d["metadata"].(string))
		}
		var got []any
		out, err := exec.Command(py, append([]string{filepath.Join("testdata", "pyiceberg_static.py")}, locs...)...).Output()
		if err != nil || json.Unmarshal(out, &got) != nil || len(got) != len(tables) {
			t.Fatalf("pyiceberg_static.py: %v\n%s", err, out)
		}
		for i, tb := range tables {
			var want []float64
			for _, r := range allRows(tb) {
				want = append(want, r["id"].(float64))
			}
			slices.Sort(want)
			if fmt.Sprint(got[i]) != fmt.Sprint(want) {
				t.Errorf("pyiceberg reads %s: %v, want ids %v", tb.name, got[i], want)
			}
		}
	}
	if cp != "" {
		for i, raw := range JavaRead(t, cp, javaArgs...) {
			var v javaView
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("Iceberg Java output %s: %v", raw, err)
			}
			t.Run("java/"+tables[i].name, func(t *testing.T) { checkJava(t, tables[i], v) })
		}
	}
	if duck != "" {
		in, _ := json.Marshal(duckIn)
		cmd := exec.Command(duck, filepath.Join("testdata", "duckdb_iceberg.py"))
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("duckdb_iceberg.py: %v\n%s", err, stderr.String())
		}
		var views []duckView
		if err := json.Unmarshal(out, &views); err != nil {
			t.Fatalf("duckdb_iceberg.py output %s: %v", out, err)
		}
		for i, v := range views {
			t.Run("duckdb/"+tables[i].name, func(t *testing.T) { checkDuckDB(t, tables[i], v) })
		}
	}
}

// checkGatewayReads: the gateway reads back what it wrote, through Scan
// and through the engine's plan of local files, each planned file there.
func checkGatewayReads(t *testing.T, p *Provider, id catalogs.TableIdent, tb optTable) {
	t.Helper()
	var want []string
	for _, r := range allRows(tb) {
		want = append(want, fmt.Sprint(r["id"]))
	}
	wantValues(t, scanAll(t, p, id, catalogs.ScanRequest{}), "id", want)
	plan, err := p.PlanFiles(context.Background(), id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range plan.Files {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: the engine's planned file: %v", tb.name, err)
		}
	}
}

func hasNanos(sc *arrow.Schema) bool {
	for _, f := range sc.Fields() {
		if ts, ok := f.Type.(*arrow.TimestampType); ok && ts.Unit == arrow.Nanosecond {
			return true
		}
	}
	return false
}

func allRows(tb optTable) []map[string]any {
	var out []map[string]any
	for _, b := range tb.batches {
		out = append(out, b...)
	}
	return out
}

func keep(rows []map[string]any, f func(map[string]any) bool) []map[string]any {
	var out []map[string]any
	for _, r := range rows {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

func checkJava(t *testing.T, tb optTable, v javaView) {
	want := allRows(tb)
	if v.FormatVersion != tb.version {
		t.Errorf("format version %d, want %d", v.FormatVersion, tb.version)
	}
	if !slices.Equal(v.Spec, tb.spec) {
		t.Errorf("partition spec %q, want %q", v.Spec, tb.spec)
	}
	if v.SortOrderID != tb.sortID || !slices.Equal(v.Sort, tb.sort) {
		t.Errorf("sort order %d %q, want %d %q", v.SortOrderID, v.Sort, tb.sortID, tb.sort)
	}
	sameRows(t, "Iceberg Java", v.Rows, want)
	var total int64
	for _, f := range v.Files {
		total += f.RowsRead
		if f.RowsRead != f.Rows {
			t.Errorf("file %s: record_count %d, Java reads %d rows", f.Path, f.Rows, f.RowsRead)
		}
		if len(f.RowPartitions) != 1 || fmt.Sprint(f.RowPartitions[0]) != fmt.Sprint(f.Partition) {
			t.Errorf("file %s records partition %v; its rows fall in %v", f.Path, f.Partition, f.RowPartitions)
		}
		if !f.Sorted {
			t.Errorf("file %s: rows not in the sort order %q", f.Path, tb.sort)
		}
		// A file claims the order only if all of it is sorted: the
		// gateway, as iceberg-go's writer, sorts batch by batch, so it
		// claims none (null is "unsorted" to every reader).
		if f.SortOrderID != nil && *f.SortOrderID != tb.sortID {
			t.Errorf("file %s: sort_order_id %d, want %d or none", f.Path, *f.SortOrderID, tb.sortID)
		}
	}
	if total != int64(len(want)) || len(v.Files) < 2 {
		t.Errorf("%d files of %d rows, want %d rows over several partitions", len(v.Files), total, len(want))
	}
	for k, f := range tb.filters {
		if k >= len(v.Filters) {
			t.Fatalf("Java ran %d filters of %d", len(v.Filters), len(tb.filters))
		}
		got := v.Filters[k]
		if got.WhereError != "" {
			// Iceberg Java 1.10's generic reader cannot evaluate a
			// residual on a timestamp_ns column (apache/iceberg#14973):
			// Read.java then filters the planned files' rows itself.
			if !strings.Contains(got.WhereError, "Not an instance of java.lang.Long") || !hasNanos(tb.schema) {
				t.Errorf("IcebergGenerics.read(table).where(%s): %s", got.Filter, got.WhereError)
			} else {
				t.Logf("IcebergGenerics.read(table).where(%s) fails on timestamp_ns (apache/iceberg#14973): %s", got.Filter, got.WhereError)
			}
		}
		sameRows(t, "Iceberg Java with "+got.Filter, got.Rows, keep(want, f.keep))
		if got.FilesPlanned >= len(v.Files) {
			t.Errorf("filter %s plans %d files of %d: no partition pruned", got.Filter, got.FilesPlanned, len(v.Files))
		}
	}
	if tb.version >= 3 {
		checkJavaLineage(t, v, int64(len(want)))
	}
}

// checkJavaLineage: each row's _row_id is its file's first_row_id plus
// its position, the ids are 0..rows-1 each once, a row's
// _last_updated_sequence_number is its file's data sequence number, and
// the snapshots' ranges follow each other up to next-row-id.
func checkJavaLineage(t *testing.T, v javaView, rows int64) {
	type file struct{ first, seq int64 }
	files := map[string]file{}
	for _, f := range v.Files {
		if f.FirstRowID == nil {
			t.Errorf("file %s: Java reads no first_row_id", f.Path)
			continue
		}
		files[f.Path] = file{*f.FirstRowID, f.DataSeq}
	}
	var rowIDs []int64
	for _, r := range v.Lineage {
		f, ok := files[r["_file"].(string)]
		rid, ok2 := r["_row_id"].(float64)
		seq, ok3 := r["_last_updated_sequence_number"].(float64)
		if !ok || !ok2 || !ok3 {
			t.Errorf("row %v: no file, _row_id or _last_updated_sequence_number", r)
			continue
		}
		if int64(rid) != f.first+int64(r["_pos"].(float64)) {
			t.Errorf("row %v: _row_id %v, want first_row_id %d + _pos", r["id"], rid, f.first)
		}
		if int64(seq) != f.seq {
			t.Errorf("row %v: _last_updated_sequence_number %v, want its file's data sequence number %d", r["id"], seq, f.seq)
		}
		rowIDs = append(rowIDs, int64(rid))
	}
	slices.Sort(rowIDs)
	for i, rid := range rowIDs {
		if rid != int64(i) {
			t.Fatalf("Java's _row_id values %v, want 0..%d each once", rowIDs, rows-1)
		}
	}
	if int64(len(rowIDs)) != rows {
		t.Errorf("%d rows with a _row_id, want %d", len(rowIDs), rows)
	}
	next := int64(0)
	for _, s := range v.Snapshots {
		if s.FirstRowID == nil || *s.FirstRowID != next || s.AddedRows == nil {
			t.Errorf("snapshot %d: first-row-id %v (added %v), want %d", s.Seq, s.FirstRowID, s.AddedRows, next)
			continue
		}
		next += *s.AddedRows
	}
	if v.NextRowID != next || next != rows {
		t.Errorf("next-row-id %d, snapshots end at %d, want %d", v.NextRowID, next, rows)
	}
}

func checkDuckDB(t *testing.T, tb optTable, v duckView) {
	switch {
	case tb.duckNo != "" && v.Error != "":
		if !strings.Contains(v.Error, tb.duckNo) {
			t.Errorf("DuckDB refuses the table with %q, want its refusal %q", v.Error, tb.duckNo)
		}
		t.Logf("DuckDB refuses the table, as expected: %s", v.Error)
		return
	case v.Error != "":
		t.Errorf("DuckDB refuses the table: %s", v.Error)
		return
	case tb.duckNo != "":
		t.Logf("DuckDB no longer refuses the table (%q): its rows are checked", tb.duckNo)
	}
	want := allRows(tb)
	sameRows(t, "DuckDB", v.Rows, want)
	for k, f := range tb.filters {
		if k >= len(v.Filters) {
			t.Fatalf("DuckDB ran %d filters of %d", len(v.Filters), len(tb.filters))
		}
		sameRows(t, "DuckDB with "+f.sql, v.Filters[k], keep(want, f.keep))
	}
}
