package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

var interleavedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "src", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// TestDeltaInterleavedWriters has the gateway and delta-rs append to one
// table at the same time (four gateway writers, group commit on, a
// write_deltalake loop in a subprocess, integration/delta/append_loop.py,
// and, with .venv-delta-duckdb, DuckDB's appender, duckdb_append_loop.py),
// then the gateway replace the table while delta-rs keeps appending. Every
// row lands once, and the table is what the log's order says (Write-
// Serializable as the log serializes it): a delta-rs batch committed
// before the replace's version is gone, one committed after it is there,
// never the other way round. The gateway's SQL and every reader of make
// delta-check read the same rows at the versions around the replace.
func TestDeltaInterleavedWriters(t *testing.T) {
	requireEngine(t)
	py := deltaPython(t)
	if py == "" {
		t.Skip("no .venv-delta (make delta-check installs deltalake)")
	}
	g := startGateway(t, `
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`)
	dir := filepath.Join(g.dataDir, "delta", "default", "inter")
	ctx := context.Background()
	ingest := func(c *flightsql.Client, o *flightsql.ExecuteIngestOpts, from, n int, src string) {
		t.Helper()
		o.Catalog = ptr("dl")
		rec := batchFromJSON(t, interleavedSchema, func(i int) string { return fmt.Sprintf(`{"id": %d, "src": %q}`, from+i, src) }, n)
		if _, err := c.ExecuteIngest(ctx, reader(t, rec), o); err != nil {
			t.Errorf("ingest of ids %d…: %v", from, err)
		}
	}
	c := g.flightClient(t)
	ingest(c, modeCreate("inter"), 900_000, 10, "create")

	// Phase A: gateway appends and delta-rs batches 1–30, at once.
	want := map[int]string{}
	for i := range 10 {
		want[900_000+i] = "create"
	}
	loop := startAppendLoop(t, py, dir, 1, 30, 10)
	// DuckDB's appender too, where its venv is there (make delta-check).
	var duck *appendLoop
	if dpy := deltaDuckDB(); dpy != "" {
		duck = startLoop(t, dpy, "delta/duckdb_append_loop.py", dir, 200, 15, 10)
	} else {
		t.Log("no DuckDB with the delta extension: DuckDB's appender does not race the others")
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cw := g.flightClient(t)
			for j := range 8 {
				ingest(cw, modeAppend("inter"), 100_000+w*1000+j*10, 5, "gateway")
			}
		}()
		for j := range 8 {
			for i := range 5 {
				want[100_000+w*1000+j*10+i] = "gateway"
			}
		}
	}
	wg.Wait()
	loop.wait(t, -1)
	if len(loop.failed) > 0 {
		t.Fatalf("delta-rs batches failed among appends only: %v", loop.failed)
	}
	for k := 1; k <= 30; k++ {
		for i := range 10 {
			want[k*1000+i] = "deltalake"
		}
	}
	if duck != nil {
		duck.wait(t, -1)
		if len(duck.failed) > 0 {
			t.Fatalf("DuckDB batches given up after 50 lost races: %v", duck.failed)
		}
		for k := 200; k < 215; k++ {
			for i := range 10 {
				want[k*1000+i] = "duckdb"
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	checkInterleaved(t, g, want)

	// Phase B: a replace while delta-rs appends batches 50–79.
	loop = startAppendLoop(t, py, dir, 50, 30, 10)
	loop.wait(t, 54) // the replace races the batches after this one
	ingest(c, ingestOpts("inter", flightsql.TableDefinitionOptionsTableNotExistOptionFail,
		flightsql.TableDefinitionOptionsTableExistsOptionReplace), 800_000, 7, "replace")
	loop.wait(t, -1)
	log := readInterleavedLog(t, dir)
	if log.overwrite < 0 {
		t.Fatal("no overwrite commit in the log")
	}
	before, at, after := maps2(want), map[int]string{}, map[int]string{}
	for i := range 7 {
		at[800_000+i], after[800_000+i] = "replace", "replace"
	}
	var early, late int
	for k := 50; k < 80; k++ {
		v, ok := log.batches[k]
		if ok == loop.failed[k] {
			t.Fatalf("delta-rs batch %d: failed %t, in the log %t", k, loop.failed[k], ok)
		}
		if !ok {
			continue // delta-rs gave it up (the replace removed files it took as read)
		}
		into := after
		if v < log.overwrite {
			into, early = before, early+1
		} else {
			late++
		}
		for i := range 10 {
			into[k*1000+i] = "deltalake"
		}
	}
	t.Logf("replace at version %d of %d: %d delta-rs batches before it, %d after, %d given up by delta-rs", log.overwrite, log.latest, early, late, len(loop.failed))
	if late == 0 {
		t.Log("no delta-rs batch landed after the replace: the race was not run")
	}
	checkInterleaved(t, g, after)

	readers := deltaReaders(t)
	if len(readers) == 0 {
		t.Skip("no Delta reader installed (make delta-check installs them)")
	}
	specs := []string{fmt.Sprintf("%s@%d", dir, log.overwrite-1), fmt.Sprintf("%s@%d", dir, log.overwrite), dir}
	for _, r := range readers {
		got := r.read(t, specs)
		for k, exp := range []map[int]string{before, at, after} {
			compareDeltaRows(t, fmt.Sprintf("%s: %s", r.name, specs[k]), []string{"id", "src"}, got[k], interleavedRows(exp))
		}
	}
}

func maps2(m map[int]string) map[int]string {
	out := make(map[int]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func interleavedRows(m map[int]string) [][]any {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	rows := make([][]any, len(ids))
	for i, id := range ids {
		rows[i] = []any{strconv.Itoa(id), m[id]}
	}
	return rows
}

// checkInterleaved checks the gateway's SQL answer against want: every
// id once, with its writer.
func checkInterleaved(t *testing.T, g *gateway, want map[int]string) {
	t.Helper()
	var sum int
	srcs := map[string]int{}
	for id, s := range want {
		sum += id
		srcs[s]++
	}
	exp := fmt.Sprintf("%d|%d|%d", len(want), len(want), sum)
	if got := queryOne(t, g, "SELECT count(*), count(DISTINCT id), sum(id) FROM dl.default.inter"); got != exp {
		t.Errorf("gateway SQL: count, distinct ids, sum %s, want %s", got, exp)
	}
	for s, n := range srcs {
		if got := queryOne(t, g, fmt.Sprintf("SELECT count(*) FROM dl.default.inter WHERE src = '%s'", s)); got != strconv.Itoa(n) {
			t.Errorf("gateway SQL: %s rows %s, want %d", s, got, n)
		}
	}
}

// appendLoop is a running append_loop.py.
type appendLoop struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	failed map[int]bool // the batches delta-rs gave up
}

func startAppendLoop(t *testing.T, py, dir string, first, n, rows int) *appendLoop {
	t.Helper()
	return startLoop(t, py, "delta/append_loop.py", dir, first, n, rows)
}

// startLoop runs an append loop script (append_loop.py's arguments and
// output).
func startLoop(t *testing.T, py, script, dir string, first, n, rows int) *appendLoop {
	t.Helper()
	cmd := exec.Command(py, script, dir, strconv.Itoa(first), strconv.Itoa(n), strconv.Itoa(rows))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &appendLoop{cmd: cmd, lines: bufio.NewScanner(out), failed: map[int]bool{}}
}

// wait reads the loop's output until batch k is done, or with k < 0 until
// the loop ends (which must be a success).
func (l *appendLoop) wait(t *testing.T, k int) {
	t.Helper()
	for l.lines.Scan() {
		verb, b, _ := strings.Cut(l.lines.Text(), " ")
		n, _ := strconv.Atoi(b)
		if verb == "failed" {
			l.failed[n] = true
		}
		if n == k {
			return
		}
	}
	if k >= 0 {
		t.Fatalf("%s ended before batch %d", l.cmd.Args[1], k)
	}
	if err := l.cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", l.cmd.Args[1], err)
	}
}

// interleavedLog is what the table's commits say: the version of each
// delta-rs batch, the gateway's overwrite, the newest version.
type interleavedLog struct {
	batches   map[int]int
	overwrite int
	latest    int
}

func readInterleavedLog(t *testing.T, dir string) interleavedLog {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	l := interleavedLog{batches: map[int]int{}, overwrite: -1}
	for _, name := range names {
		v, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(name), ".json"))
		if err != nil {
			continue
		}
		l.latest = max(l.latest, v)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var a struct {
				CommitInfo *struct {
					Batch      string            `json:"flightgw.test.batch"`
					Engine     string            `json:"engineInfo"`
					Parameters map[string]string `json:"operationParameters"`
				} `json:"commitInfo"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ci := a.CommitInfo
			switch {
			case ci == nil:
			case ci.Batch != "":
				k, _ := strconv.Atoi(ci.Batch)
				if prev, ok := l.batches[k]; ok {
					t.Errorf("delta-rs batch %d landed twice: versions %d and %d", k, prev, v)
				}
				l.batches[k] = v
			case ci.Engine == "flightgw" && ci.Parameters["mode"] == "Overwrite":
				l.overwrite = v
			}
		}
	}
	return l
}
