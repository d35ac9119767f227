package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/codec/actions"
)

// TestDeltaReadersAfterOptimize: tables of six small appends each (every
// type; partitioned by two hostile columns; both column-mapped; one with
// in-commit timestamps and a checkpoint every two versions) are compacted
// through the MaintainTable action (optimize, then checkpoint); the
// independent readers (delta-rs, DuckDB's delta extension, Delta Kernel
// when FLIGHTGW_DELTA_KERNEL is set) read every version, those before
// the OPTIMIZE by time travel and the one after it, value by value, and
// the OPTIMIZE version has fewer live files.
func TestDeltaReadersAfterOptimize(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`)
	c, ctx := g.flightClient(t), context.Background()
	ns := filepath.Join(g.dataDir, "delta", "default")
	type table struct {
		name    string
		schema  *arrow.Schema
		row     func(int) (string, []any)
		options map[string]string
		per     int // rows per append
	}
	tables := []table{
		{"every", everySchema, everyRow, nil, 5},
		{"hostile", hostileSchema, hostileRow, map[string]string{"partition": "p,q"}, 13},
		{"every_cm", everySchema, everyRow, map[string]string{"delta.columnMapping.mode": "id"}, 5},
		{"hostile_cm", hostileSchema, hostileRow, map[string]string{"partition": "p,q", "delta.columnMapping.mode": "name"}, 13},
		{"ict", hostileSchema, hostileRow, map[string]string{"partition": "p,q", "delta.enableInCommitTimestamps": "true", "delta.checkpointInterval": "2"}, 13},
	}
	const appends = 6
	var specs []string
	type check struct {
		table table
		rows  int // rows [0, rows)
	}
	var checks []check
	for _, tb := range tables {
		first := 0 // the version holding the first append
		if tb.options["delta.columnMapping.mode"] != "" {
			first = 1 // created up front: an empty version 0
		}
		for k := range appends {
			o := modeAppend(tb.name)
			if k == 0 {
				o = modeCreate(tb.name)
				o.Options = tb.options
			}
			o.Catalog = ptr("dl")
			b := batchFromJSON(t, tb.schema, func(i int) string { s, _ := tb.row(k*tb.per + i); return s }, tb.per)
			if _, err := c.ExecuteIngest(ctx, reader(t, b), o); err != nil {
				t.Fatalf("%s append %d: %v", tb.name, k, err)
			}
		}
		req := actions.MaintainRequest{TableRef: actions.TableRef{Catalog: "dl", Schema: "default", Table: tb.name},
			Tasks: []string{"optimize", "checkpoint"}}
		res, err := client.MaintainTable(ctx, c, req)
		if err != nil {
			t.Fatalf("%s: MaintainTable: %v", tb.name, err)
		}
		if tr := res.Tasks[0]; !tr.Committed || tr.AddedFiles >= tr.RewrittenFiles {
			t.Fatalf("%s: optimize = %+v, want fewer files", tb.name, tr)
		}
		optimized := first + appends
		dir := ns + "/" + tb.name
		checkOptimizeCommit(t, dir, optimized)
		for v := first; v <= optimized; v++ {
			n := min(v-first+1, appends) * tb.per
			specs = append(specs, fmt.Sprintf("%s@%d", dir, v))
			checks = append(checks, check{tb, n})
		}
		specs = append(specs, dir)
		checks = append(checks, check{tb, appends * tb.per})
		if got, want := queryOne(t, g, "SELECT count(*), count(DISTINCT id) FROM dl.default."+tb.name), fmt.Sprintf("%d|%d", appends*tb.per, appends*tb.per); got != want {
			t.Errorf("%s by SQL after optimize: %s, want %s", tb.name, got, want)
		}
	}
	readers := deltaReaders(t)
	if len(readers) == 0 {
		t.Skip("no Delta reader installed (make delta-check installs them)")
	}
	for _, r := range readers {
		got := r.read(t, specs)
		for k, ck := range checks {
			what := fmt.Sprintf("%s: %s (%s)", r.name, ck.table.name, specs[k])
			var want [][]any
			for i := range ck.rows {
				_, w := ck.table.row(i)
				want = append(want, w)
			}
			cols := fieldNames(ck.table.schema)
			if r.name == "duckdb-delta" && ck.table.options["delta.columnMapping.mode"] != "" && ck.table.options["partition"] != "" {
				// duckdb/duckdb-delta#50, #343 (checkDeltaReaders says more).
				part := strings.Split(ck.table.options["partition"], ",")
				cols = slices.DeleteFunc(cols, func(c string) bool { return slices.Contains(part, c) })
				want = dropColumns(fieldNames(ck.table.schema), want, part)
			}
			compareDeltaRows(t, what, cols, got[k], want)
		}
	}
}

// checkOptimizeCommit checks log version v of the table at dir: an
// OPTIMIZE commitInfo, and every add and remove with dataChange false.
func checkOptimizeCommit(t *testing.T, dir string, v int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		t.Fatal(err)
	}
	var op string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var a map[string]map[string]any
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("%s version %d: %v", dir, v, err)
		}
		if ci, ok := a["commitInfo"]; ok {
			op, _ = ci["operation"].(string)
		}
		for _, k := range []string{"add", "remove"} {
			if x, ok := a[k]; ok && x["dataChange"] != false {
				t.Errorf("%s version %d: %s with dataChange %v", dir, v, k, x["dataChange"])
			}
		}
	}
	if op != "OPTIMIZE" {
		t.Errorf("%s version %d: operation %q, want OPTIMIZE", dir, v, op)
	}
}

// TestDeltaOptimizeBesideEightWriters: eight clients append small batches
// to a partitioned table through the gateway while an operator runs
// MaintainTable optimize in a loop: no append and no optimize errs, no
// optimize is abandoned (appends do not conflict with a compaction) and
// some commit; every row lands exactly once (by SQL and by each reader);
// and the independent readers read every version alike: each version's
// rows distinct, each holding the rows of the version before (OPTIMIZE
// changes no row), the last holding every row.
func TestDeltaOptimizeBesideEightWriters(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	batch := func(from, n int) arrow.RecordBatch {
		return batchFromJSON(t, schema, func(i int) string {
			id := from + i
			return fmt.Sprintf(`{"id": %d, "p": "p%d", "name": "row-%d"}`, id, id%2, id)
		}, n)
	}
	const writers, appends, rows = 8, 10, 20
	admin := g.flightClient(t)
	o := modeCreate("busy")
	o.Catalog, o.Options = ptr("dl"), map[string]string{"partition": "p"}
	if _, err := admin.ExecuteIngest(ctx, reader(t, batch(0, rows)), o); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := range writers {
		c := g.flightClient(t)
		var rs []array.RecordReader
		for k := range appends {
			if w == 0 && k == 0 {
				continue // the create's
			}
			rs = append(rs, reader(t, batch((w*appends+k)*rows, rows)))
		}
		wg.Go(func() {
			for k, r := range rs {
				o := modeAppend("busy")
				o.Catalog = ptr("dl")
				if _, err := c.ExecuteIngest(ctx, r, o); err != nil {
					failed.Add(1)
					t.Errorf("writer %d append %d: %v", w, k, err)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	req := actions.MaintainRequest{TableRef: actions.TableRef{Catalog: "dl", Schema: "default", Table: "busy"}, Tasks: []string{"optimize"}}
	committed, runs := 0, 0
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		default:
		}
		res, err := client.MaintainTable(ctx, admin, req)
		runs++
		if err != nil {
			t.Fatalf("MaintainTable optimize beside the writers: %v", err)
		}
		if tr := res.Tasks[0]; tr.Abandoned != "" {
			t.Errorf("optimize abandoned beside appends: %s", tr.Abandoned)
		} else if tr.Committed {
			committed++
		}
	}
	if failed.Load() > 0 {
		t.Fatalf("%d of %d appends failed beside optimize", failed.Load(), writers*appends-1)
	}
	if committed == 0 {
		t.Errorf("none of %d optimizes committed beside the writers", runs)
	}
	total := writers * appends * rows
	if got, want := queryOne(t, g, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM dl.default.busy"), fmt.Sprintf("%d|%d|0|%d", total, total, total-1); got != want {
		t.Errorf("by SQL: count, distinct, min, max = %s, want %s", got, want)
	}
	dir := filepath.Join(g.dataDir, "delta", "default", "busy")
	logs, err := filepath.Glob(filepath.Join(dir, "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	last := len(logs) - 1 // versions 0..last
	optimized := map[int]bool{}
	for v := range last + 1 {
		if deltaOperation(t, dir, v) == "OPTIMIZE" {
			optimized[v] = true
		}
	}
	if len(optimized) != committed {
		t.Errorf("%d OPTIMIZE versions in the log, %d optimizes reported committed", len(optimized), committed)
	}
	// Group commit lands concurrent appends in one version: fewer versions
	// than appends.
	t.Logf("%d appends by %d writers in %d versions, %d of %d optimizes committed", writers*appends, writers, last+1-committed, committed, runs)

	readers := deltaReaders(t)
	if len(readers) == 0 {
		t.Skip("no Delta reader installed (make delta-check installs them)")
	}
	var specs []string
	for v := range last + 1 {
		specs = append(specs, fmt.Sprintf("%s@%d", dir, v))
	}
	var first [][]int64 // the first reader's ids at each version
	for _, r := range readers {
		got := r.read(t, specs)
		var seen [][]int64
		for v, out := range got {
			k := slices.Index(out.Columns, "id")
			if k < 0 {
				t.Fatalf("%s: version %d: columns %v, without id", r.name, v, out.Columns)
			}
			var ids []int64
			for _, row := range out.Rows {
				ids = append(ids, jsonInt(t, row[k]))
			}
			slices.Sort(ids)
			if len(slices.Compact(slices.Clone(ids))) != len(ids) {
				t.Errorf("%s: version %d: %d rows, some twice", r.name, v, len(ids))
			}
			if v > 0 && !subset(seen[v-1], ids) {
				t.Errorf("%s: version %d lost rows of version %d", r.name, v, v-1)
			}
			if optimized[v] && !slices.Equal(seen[v-1], ids) {
				t.Errorf("%s: OPTIMIZE version %d reads %d rows, version %d %d", r.name, v, len(ids), v-1, len(seen[v-1]))
			}
			seen = append(seen, ids)
		}
		if n := len(seen[last]); n != total || seen[last][0] != 0 || seen[last][n-1] != int64(total-1) {
			t.Errorf("%s: the last version has %d rows, want ids 0..%d once each", r.name, n, total-1)
		}
		if first == nil {
			first = seen
			continue
		}
		for v := range seen {
			if !slices.Equal(seen[v], first[v]) {
				t.Errorf("%s and %s disagree at version %d: %d rows and %d", r.name, readers[0].name, v, len(seen[v]), len(first[v]))
			}
		}
	}
}

// deltaOperation is the commitInfo operation of log version v of the
// table at dir.
func deltaOperation(t *testing.T, dir string, v int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var a struct {
			CommitInfo *struct {
				Operation string `json:"operation"`
			} `json:"commitInfo"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("%s version %d: %v", dir, v, err)
		}
		if a.CommitInfo != nil {
			return a.CommitInfo.Operation
		}
	}
	return ""
}

// jsonInt is an integer a reader printed, as a number or a string.
func jsonInt(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err == nil {
			return n
		}
	}
	t.Fatalf("id %v (%T) is not an integer", v, v)
	return 0
}

// subset says whether every element of sorted a is in sorted b.
func subset(a, b []int64) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			return false
		}
	}
	return true
}
