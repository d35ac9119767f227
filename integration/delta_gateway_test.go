package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	_ "github.com/flightgw/flightgw/catalogs/delta"
)

// deltaPythonEnv names the Python with deltalake 1.6.6 (mk/delta.mk sets
// it); without it the test looks for the worktree's .venv-delta.
const deltaPythonEnv = "FLIGHTGW_DELTALAKE"

var deltaSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
}, nil)

// deltaRow is row i of the test's data, as JSON and as the reader
// script renders it (every fifth row's optional columns are null).
func deltaRow(i int) (string, []any) {
	if i%5 == 4 {
		return fmt.Sprintf(`{"id": %d, "name": null, "score": null, "day": null, "at": null, "ok": null, "amount": null}`, i),
			[]any{fmt.Sprint(i), nil, nil, nil, nil, nil, nil}
	}
	day := fmt.Sprintf("2024-01-%02d", 1+i%28)
	at := fmt.Sprintf("2024-02-03 04:05:%02d.%06d", i%60, 1000*i+7)
	return fmt.Sprintf(`{"id": %d, "name": "n%d-é", "score": %d.25, "day": %q, "at": %q, "ok": %t, "amount": "%d.%02d"}`,
			i, i, i, day, strings.Replace(at, " ", "T", 1)+"Z", i%2 == 0, i*3, i%100),
		[]any{fmt.Sprint(i), fmt.Sprintf("n%d-é", i), fmt.Sprintf("%d.25", i), day, at, fmt.Sprint(i%2 == 0), fmt.Sprintf("%d.%02d", i*3, i%100)}
}

func deltaBatch(t *testing.T, from, n int) arrow.RecordBatch {
	return batchFromJSON(t, deltaSchema, func(i int) string { s, _ := deltaRow(from + i); return s }, n)
}

// TestDeltaThroughTheGateway ingests into a Delta table the ingest
// creates, appends twice (once in a transaction), reads the rows back
// with SQL, and has delta-rs (deltalake 1.6.6) read the table value by
// value when its venv exists (make delta-check).
func TestDeltaThroughTheGateway(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`)
	c, ctx := g.flightClient(t), context.Background()
	create := modeCreate("typed")
	create.Catalog = ptr("dl")
	if n, err := c.ExecuteIngest(ctx, reader(t, deltaBatch(t, 0, 10)), create); err != nil || n != 10 {
		t.Fatalf("create: n=%d err=%v", n, err)
	}
	app := modeAppend("typed")
	app.Catalog = ptr("dl")
	if _, err := c.ExecuteIngest(ctx, reader(t, deltaBatch(t, 10, 5)), app); err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := modeAppend("typed")
	in.Catalog, in.TransactionId = ptr("dl"), tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, deltaBatch(t, 15, 3)), in); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := queryOne(t, g, "SELECT count(*), count(name), min(id), max(id), sum(amount) FROM dl.default.typed"), "18|15|0|17|"; !strings.HasPrefix(got, want) {
		t.Fatalf("SQL: %s, want %s…", got, want)
	}
	if got := queryOne(t, g, "SELECT name, score, day, ok, amount FROM dl.default.typed WHERE id = 12"); got != "n12-é|12.25|2024-01-13|true|36.12" {
		t.Fatalf("row 12 by SQL = %s", got)
	}
	// A table partitioned by two columns (one with nulls) from the
	// ingest's option; an option the backend lacks is refused naming it.
	bad := modeCreate("parted")
	bad.Catalog, bad.Options = ptr("dl"), map[string]string{"bucket": "4"}
	if _, err := c.ExecuteIngest(ctx, reader(t, deltaBatch(t, 0, 2)), bad); err == nil || !strings.Contains(err.Error(), "bucket") {
		t.Fatalf("create with option bucket: %v, want a refusal naming it", err)
	}
	parted := modeCreate("parted")
	parted.Catalog, parted.Options = ptr("dl"), map[string]string{"partition": "ok,day"}
	if _, err := c.ExecuteIngest(ctx, reader(t, deltaBatch(t, 0, 12)), parted); err != nil {
		t.Fatal(err)
	}
	pa := modeAppend("parted")
	pa.Catalog = ptr("dl")
	if _, err := c.ExecuteIngest(ctx, reader(t, deltaBatch(t, 12, 6)), pa); err != nil {
		t.Fatal(err)
	}
	if got := queryOne(t, g, "SELECT count(*), count(DISTINCT day), count(ok) FROM dl.default.parted"); got != "18|15|15" {
		t.Fatalf("partitioned table by SQL: %s", got)
	}
	if got := queryOne(t, g, "SELECT name, day, ok FROM dl.default.parted WHERE id = 12"); got != "n12-é|2024-01-13|true" {
		t.Fatalf("row 12 of the partitioned table by SQL = %s", got)
	}

	// A replace is one overwrite commit: the old files removed, the new
	// ones added.
	for i, o := range []*flightsql.ExecuteIngestOpts{modeCreate("replaced"),
		ingestOpts("replaced", flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionReplace)} {
		o.Catalog = ptr("dl")
		if _, err := c.ExecuteIngest(ctx, reader(t, deltaBatch(t, 3*i, 10-5*i)), o); err != nil {
			t.Fatal(err)
		}
	}
	if got := queryOne(t, g, "SELECT count(*), min(id), max(id) FROM dl.default.replaced"); got != "5|3|7" {
		t.Fatalf("replaced table by SQL: %s, want 5|3|7", got)
	}

	py := deltaPython(t)
	if py == "" {
		t.Log("no deltalake venv (make delta-check makes one): the delta-rs read is skipped")
		return
	}
	for _, tc := range []struct {
		table     string
		version   int64
		files     int // 0: not checked
		from, ids int
	}{
		// A create is staged: version 0 holds the create's rows, each
		// later ingest or committed transaction one version.
		{"typed", 2, 3, 0, 18}, {"parted", 1, 0, 0, 18}, {"replaced", 1, 1, 3, 5}} {
		got := readDelta(t, py, filepath.Join(g.dataDir, "delta", "default", tc.table))
		if got.Version != tc.version || !slices.Equal(got.Protocol, []int{1, 7}) {
			t.Errorf("%s: deltalake sees version %d, protocol %v; want %d, [1 7]", tc.table, got.Version, got.Protocol, tc.version)
		}
		if tc.files != 0 && got.Files != tc.files {
			t.Errorf("%s: deltalake sees %d files, want %d", tc.table, got.Files, tc.files)
		}
		if len(got.Rows) != tc.ids {
			t.Fatalf("%s: deltalake reads %d rows, want %d", tc.table, len(got.Rows), tc.ids)
		}
		for i, r := range got.Rows {
			_, want := deltaRow(tc.from + i)
			for j, name := range deltaSchema.Fields() {
				k := slices.Index(got.Columns, name.Name)
				if k < 0 {
					t.Fatalf("%s: deltalake reads columns %v, without %s", tc.table, got.Columns, name.Name)
				}
				if fmt.Sprint(r[k]) != fmt.Sprint(want[j]) {
					t.Errorf("%s: row %d column %s: deltalake reads %v, want %v", tc.table, i, name.Name, r[k], want[j])
				}
			}
		}
	}
}

// deltaRead is what integration/delta/read_table.py prints.
type deltaRead struct {
	Version  int64
	Protocol []int
	Files    int
	Columns  []string
	Rows     [][]any
}

// readDelta has delta-rs read the table at dir.
func readDelta(t *testing.T, py, dir string) deltaRead {
	t.Helper()
	out, err := exec.Command(py, "delta/read_table.py", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("deltalake read of %s: %v\n%s", dir, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got deltaRead
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return got
}

// deltaPython is the Python of FLIGHTGW_DELTALAKE, or of the worktree's
// .venv-delta when it exists; "" when neither.
func deltaPython(t *testing.T) string {
	if py := os.Getenv(deltaPythonEnv); py != "" {
		return py
	}
	py, err := filepath.Abs("../.venv-delta/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		return ""
	}
	return py
}
