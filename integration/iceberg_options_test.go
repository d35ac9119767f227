package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"
)

// eventsSchema has a timestamp to partition by day.
var eventsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// events builds 24 rows over three days, 2026-01-01 to 2026-01-03, one
// every three hours.
func events(t *testing.T) arrow.RecordBatch {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return batchFromJSON(t, eventsSchema, func(i int) string {
		return fmt.Sprintf(`{"id": %d, "ts": %q, "name": "e%d"}`, i, start.Add(time.Duration(i)*3*time.Hour).Format("2006-01-02T15:04:05Z"), i)
	}, 24)
}

// layoutScript prints, as pyiceberg reads the table: its spec, sort
// order, and for each data file the partition it records and the
// partitions its rows fall in (computed by pyiceberg's transforms).
const layoutScript = `
import json, sys
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
d = sys.argv[1]
cat = SqlCatalog("lake", uri="sqlite:///" + d + "/catalog.db", warehouse="file://" + d + "/warehouse")
t = cat.load_table("default.events")
spec = t.spec()
sc = t.schema()
out = {"spec": [f"{f.name}={f.transform}({sc.find_field(f.source_id).name})" for f in spec.fields],
       "sort_order_id": t.sort_order().order_id,
       "sort": [f"{sc.find_field(f.source_id).name} {f.direction.name} {f.null_order.name}" for f in t.sort_order().fields],
       "files": []}
for task in t.scan().plan_files():
    df = task.file
    rows = pq.read_table(df.file_path.removeprefix("file://")).to_pylist()
    seen = set()
    for r in rows:
        key = []
        for f in spec.fields:
            src = sc.find_field(f.source_id)
            key.append(f.transform.transform(src.field_type)(r[src.name] if src.name != "ts" else int(r["ts"].timestamp() * 1_000_000)))
        seen.add(tuple(key))
    out["files"].append({"partition": list(df.partition), "row_partitions": sorted(list(k) for k in seen), "rows": len(rows),
                         "desc": [r["id"] for r in rows] == sorted((r["id"] for r in rows), reverse=True),
                         "sort_order_id": df.sort_order_id})
print(json.dumps(out))
`

// TestIcebergTableOptionsAtCreate: an ingest with partition and sort
// options creates a table that pyiceberg reads with that spec and sort
// order, whose files each hold one partition, and that a filtered query
// prunes by partition.
func TestIcebergTableOptionsAtCreate(t *testing.T) {
	requireEngine(t)
	python, err := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no project venv (%v): make venv creates it", err)
	}
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	o := modeCreate("events")
	o.Options = map[string]string{"partition": "day(ts), bucket(8, id)", "sort": "id desc", "write.parquet.compression-codec": "snappy"}
	if n, err := c.ExecuteIngest(ctx, reader(t, events(t)), o); err != nil || n != 24 {
		t.Fatalf("create with options: %d, %v", n, err)
	}
	if got := g.loadTable(t, "events").Properties()["write.parquet.compression-codec"]; got != "snappy" {
		t.Errorf("compression codec property = %q, want snappy", got)
	}

	cmd := exec.Command(python, "-c", layoutScript, g.dataDir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v", err)
	}
	var got struct {
		Spec        []string `json:"spec"`
		SortOrderID int      `json:"sort_order_id"`
		Sort        []string `json:"sort"`
		Files       []struct {
			Partition     []any   `json:"partition"`
			RowPartitions [][]any `json:"row_partitions"`
			Rows          int     `json:"rows"`
			Desc          bool    `json:"desc"`
		} `json:"files"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pyiceberg output %q: %v", out, err)
	}
	if strings.Join(got.Spec, ",") != "ts_day=day(ts),id_bucket=bucket[8](id)" {
		t.Fatalf("spec = %q", got.Spec)
	}
	if got.SortOrderID != 1 || strings.Join(got.Sort, ",") != "id DESC NULLS_LAST" {
		t.Errorf("sort order %d = %q, want 1 = id DESC NULLS_LAST", got.SortOrderID, got.Sort)
	}
	rows, day3 := 0, 0
	// 2026-01-03 is day 20456 since the epoch.
	const third = 20456
	for _, f := range got.Files {
		rows += f.Rows
		if len(f.RowPartitions) != 1 || fmt.Sprint(f.RowPartitions[0]) != fmt.Sprint(f.Partition) {
			t.Errorf("file with partition %v holds rows of partitions %v", f.Partition, f.RowPartitions)
		}
		// One batch: iceberg-go sorts each batch it writes by the order.
		if !f.Desc {
			t.Errorf("file with partition %v: ids not in descending order", f.Partition)
		}
		if fmt.Sprint(f.Partition[0]) == fmt.Sprint(third) {
			day3++
		}
	}
	if rows != 24 || len(got.Files) < 4 || day3 == 0 {
		t.Fatalf("%d files, %d rows, %d of day 3: want 24 rows over several partitions", len(got.Files), rows, day3)
	}

	cnxn := g.adbcConn(t, nil)
	if r := mustRows(t, cnxn, `SELECT count(*) FROM events WHERE ts >= '2026-01-03 00:00:00'`, nil); r[0] != "8" {
		t.Fatalf("day 3 count: %q", r)
	}
	want := fmt.Sprintf("files_planned=%d files_total=%d", day3, len(got.Files))
	if !strings.Contains(g.logs.String(), want) {
		t.Fatalf("no scan with %s in the logs:\n%s", want, grepLines(g.logs.String(), "query scan"))
	}
	// An equality on id plans only the one file of its bucket (the files'
	// id ranges overlap, so their column stats alone may keep several).
	if r := mustRows(t, cnxn, `SELECT name FROM events WHERE id = 5`, nil); r[0] != "e5" {
		t.Fatalf("id 5: %q", r)
	}
	want = fmt.Sprintf("files_planned=1 files_total=%d", len(got.Files))
	if !strings.Contains(g.logs.String(), want) {
		t.Fatalf("no scan with %s in the logs:\n%s", want, grepLines(g.logs.String(), "query scan"))
	}
}

// TestIcebergTableOptionsFormatVersion1: a v1 table, partitioned, is
// created, written and read back.
func TestIcebergTableOptionsFormatVersion1(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	o := modeCreate("v1")
	o.Options = map[string]string{"format-version": "1", "partition": "month(ts), truncate(2, name)"}
	for range 2 {
		if _, err := c.ExecuteIngest(context.Background(), reader(t, events(t)), o); err != nil {
			t.Fatal(err)
		}
		o = ingestOpts("v1", flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionAppend)
	}
	tbl := g.loadTable(t, "v1")
	if v := tbl.Metadata().Version(); v != 1 {
		t.Fatalf("format version %d, want 1", v)
	}
	if got := tbl.Spec().String(); !strings.Contains(got, "month") || !strings.Contains(got, "truncate[2]") {
		t.Fatalf("spec %s", got)
	}
	if n := g.readTable(t, "v1").NumRows(); n != 48 {
		t.Fatalf("read %d rows, want 48", n)
	}
}

// TestIcebergTableOptionsRefused: every option the gateway cannot honour
// is refused, with a message naming it (and the column at fault), and no
// table is left behind.
func TestIcebergTableOptionsRefused(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		opts map[string]string
		want []string
	}{
		{map[string]string{"bucket": "4"}, []string{`"bucket"`}},
		{map[string]string{"partition": "day(name)"}, []string{`"partition"`, `"name"`}},
		{map[string]string{"partition": "bucket(8, nope)"}, []string{`"partition"`, `"nope"`}},
		{map[string]string{"partition": "bucket(0, id)"}, []string{`"partition"`, "bucket"}},
		{map[string]string{"partition": "zorder(id)"}, []string{`"partition"`, "zorder"}},
		{map[string]string{"partition": "truncate(4, ts)"}, []string{`"partition"`, `"ts"`}},
		{map[string]string{"sort": "id sideways"}, []string{`"sort"`, "sideways"}},
		{map[string]string{"sort": "missing desc"}, []string{`"sort"`, `"missing"`}},
		{map[string]string{"format-version": "7"}, []string{`"format-version"`, "7"}},
		{map[string]string{"write.parquet.compression-codec": "lzo"}, []string{`"write.parquet.compression-codec"`, "lzo"}},
		{map[string]string{"write.parquet.compression-level": "30"}, []string{`"write.parquet.compression-level"`, "zstd"}},
		{map[string]string{"write.parquet.compression-codec": "snappy", "write.parquet.compression-level": "3"}, []string{`"write.parquet.compression-level"`, "snappy"}},
		{map[string]string{"commit.retry.num-retries": "many"}, []string{`"commit.retry.num-retries"`, "many"}},
		{map[string]string{"gc.enabled": "yes"}, []string{`"gc.enabled"`}},
		{map[string]string{"write.data.path": "/tmp/elsewhere"}, []string{`"write.data.path"`}},
		{map[string]string{"write.target-file-size-bytes": "1024"}, []string{`"write.target-file-size-bytes"`}},
		{map[string]string{"write.metadata.metrics.column.nope": "full"}, []string{"write.metadata.metrics.column.nope", `"nope"`}},
		{map[string]string{"uuid": "x"}, []string{`"uuid"`}},
	} {
		o := modeCreate("refused")
		o.Options = tc.opts
		_, err := c.ExecuteIngest(ctx, reader(t, events(t)), o)
		for _, w := range tc.want {
			assertStatus(t, err, codes.InvalidArgument, w)
		}
	}
	// An option on an ingest that cannot create the table is refused, not
	// dropped.
	if _, err := c.ExecuteIngest(ctx, reader(t, events(t)), modeCreate("plain")); err != nil {
		t.Fatal(err)
	}
	o := modeAppend("plain")
	o.Options = map[string]string{"partition": "id"}
	_, err := c.ExecuteIngest(ctx, reader(t, events(t)), o)
	assertStatus(t, err, codes.InvalidArgument, `"partition"`)
	// A create_append onto the existing table appends to it as it is, and
	// still refuses an option no create would take.
	o = ingestOpts("plain", flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionAppend)
	o.Options = map[string]string{"partition": "day(ts)"}
	if _, err := c.ExecuteIngest(ctx, reader(t, events(t)), o); err != nil {
		t.Fatalf("create_append onto an existing table, with options: %v", err)
	}
	if tbl := g.loadTable(t, "plain"); !tbl.Spec().IsUnpartitioned() {
		t.Errorf("plain: spec %s changed by a create_append", tbl.Spec())
	}
	o.Options = map[string]string{"partition": "day(name)"}
	_, err = c.ExecuteIngest(ctx, reader(t, events(t)), o)
	assertStatus(t, err, codes.InvalidArgument, `"name"`)
	// A replace of an existing table keeps its layout: options refused.
	o = ingestOpts("plain", flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionReplace)
	o.Options = map[string]string{"partition": "id"}
	_, err = c.ExecuteIngest(ctx, reader(t, events(t)), o)
	assertStatus(t, err, codes.InvalidArgument, `"partition"`)
	// A replace that creates the table applies them.
	o = ingestOpts("replaced", flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionReplace)
	o.Options = map[string]string{"partition": "id"}
	if _, err := c.ExecuteIngest(ctx, reader(t, events(t)), o); err != nil {
		t.Fatalf("replace that creates, with options: %v", err)
	}
	if got := g.loadTable(t, "replaced").Spec().String(); !strings.Contains(got, "identity") {
		t.Errorf("replaced: spec %s, want identity(id)", got)
	}
	if _, err := g.catalog(t).LoadTable(ctx, table.Identifier{"default", "refused"}); err == nil {
		t.Error("a refused create left table refused in the catalog")
	}
}
