package delta_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// sparkFixtures are the tables Delta Spark wrote
// (integration/delta/spark/make_fixtures.py; testdata/spark/README.md).
const sparkFixtures = "testdata/spark"

// sparkExpected is a fixture's expected.json: the rows Spark read back.
type sparkExpected struct {
	Version int64
	Columns []string
	Rows    [][]any
}

// readerOut is one line of what integration/delta/read_table.py and
// Read.java print.
type readerOut struct {
	Version int64
	Columns []string
	Rows    [][]any
}

// TestSparkFixtures: the gateway reads each table Delta Spark 4.0 wrote
// (deletion vectors on disk, V2 checkpoints with sidecars in JSON and in
// Parquet, column mapping name and id with renamed and dropped columns,
// row tracking with materialized row ids, timestamp_ntz partitions,
// in-commit timestamps turned on after the create with vacuumProtocolCheck,
// a column and struct fields added after the first files)
// exactly as Spark read it, appends the same rows to it and reads every
// row twice, then replaces the table with them and reads each once;
// delta-rs (FLIGHTGW_DELTALAKE or .venv-delta) and Delta Kernel Java
// (FLIGHTGW_DELTA_KERNEL, as make delta-check sets it) read both
// versions the same.
func TestSparkFixtures(t *testing.T) {
	wh := t.TempDir()
	if err := os.CopyFS(filepath.Join(wh, "spark"), os.DirFS(sparkFixtures)); err != nil {
		t.Fatal(err)
	}
	p := openLocal(t, wh)
	readers := sparkReaders(t)
	tables := []string{"dv", "v2checkpoint_json", "v2checkpoint_parquet", "colmap_name", "colmap_id", "rowtracking", "ntz_partitioned", "ict", "evolved"}
	for _, name := range tables {
		t.Run(name, func(t *testing.T) {
			var want sparkExpected
			b, err := os.ReadFile(filepath.Join(sparkFixtures, name, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			id := ident("spark", name)
			bs, _, err := scanAll(t, p, id)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			compareRendered(t, "the gateway's read", renderSpark(t, bs, want.Columns), want)

			s, err := p.OpenStream(context.Background(), id, catalogs.WriteTxn{})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bs {
				if err := s.Write(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			rs, err := s.Close(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Commit(context.Background(), id, rs)
			if err != nil {
				t.Fatal(err)
			}
			if out.SnapshotID != want.Version+1 {
				t.Errorf("the append landed as version %d, want %d", out.SnapshotID, want.Version+1)
			}
			switch name {
			case "rowtracking":
				checkRowIDs(t, filepath.Join(wh, "spark", name), want.Version)
			case "ict":
				checkInCommitTimestamp(t, filepath.Join(wh, "spark", name), want.Version)
			}
			twice := sparkExpected{Version: want.Version + 1, Columns: want.Columns}
			for _, r := range want.Rows {
				twice.Rows = append(twice.Rows, r, r)
			}
			bs2, _, err := scanAll(t, p, id)
			if err != nil {
				t.Fatalf("scan after the append: %v", err)
			}
			compareRendered(t, "the gateway's read after its append", renderSpark(t, bs2, want.Columns), twice)

			// Then a replace with Spark's rows: every file goes (with its
			// deletion vector, row ids and physical names), the rows are
			// there once.
			var rs2 []catalogs.WriteReceipt
			for _, b := range bs {
				r, err := p.WriteBatch(context.Background(), id, b)
				if err != nil {
					t.Fatal(err)
				}
				rs2 = append(rs2, r)
			}
			if out, err := p.CommitOverwrite(context.Background(), id, "", rs2); err != nil || out.SnapshotID != want.Version+2 {
				t.Fatalf("overwrite: %+v, %v; want version %d", out, err, want.Version+2)
			}
			switch name {
			case "rowtracking":
				checkRowIDs(t, filepath.Join(wh, "spark", name), want.Version+1)
			case "ict":
				checkInCommitTimestamp(t, filepath.Join(wh, "spark", name), want.Version+1)
			}
			once := sparkExpected{Version: want.Version + 2, Columns: want.Columns, Rows: want.Rows}
			bs3, _, err := scanAll(t, p, id)
			if err != nil {
				t.Fatalf("scan after the overwrite: %v", err)
			}
			compareRendered(t, "the gateway's read after its overwrite", renderSpark(t, bs3, want.Columns), once)
			dir := filepath.Join(wh, "spark", name)
			for _, r := range readers {
				if r.name == "deltalake" && name == "ict" {
					// deltalake 1.6.6: "Unsupported table features required:
					// [VacuumProtocolCheck]" (its reads refuse the feature).
					t.Log("deltalake cannot read a table with vacuumProtocolCheck: not checked")
					continue
				}
				for k, got := range r.read(t, fmt.Sprintf("%s@%d", dir, want.Version+1), dir) {
					w, what := twice, "append"
					if k == 1 {
						w, what = once, "overwrite"
					}
					if got.Version != w.Version {
						t.Errorf("%s reads version %d, want %d", r.name, got.Version, w.Version)
					}
					compareRendered(t, r.name+"'s read after the gateway's "+what, got.Rows, sameColumns(t, r.name, got.Columns, w))
				}
			}
		})
	}
}

// sameColumns is want, once a reader's columns are checked to be the
// table's, in its order.
func sameColumns(t *testing.T, reader string, cols []string, want sparkExpected) sparkExpected {
	t.Helper()
	if !slices.Equal(cols, want.Columns) {
		t.Fatalf("%s reads columns %v, want %v", reader, cols, want.Columns)
	}
	return want
}

// compareRendered compares rendered rows, sorted by their first column,
// with want's, value by value.
func compareRendered(t *testing.T, what string, got [][]any, want sparkExpected) {
	t.Helper()
	sortRows(got)
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want.Rows)
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func sortRows(rows [][]any) {
	slices.SortStableFunc(rows, func(a, b []any) int {
		x, _ := strconv.ParseInt(fmt.Sprint(a[0]), 10, 64)
		y, _ := strconv.ParseInt(fmt.Sprint(b[0]), 10, 64)
		return int(x - y)
	})
}

// renderSpark renders batches as integration/delta/render.py does, the
// columns in cols' order.
func renderSpark(t *testing.T, bs []arrow.RecordBatch, cols []string) [][]any {
	t.Helper()
	var out [][]any
	for _, b := range bs {
		idx := make([]int, len(cols))
		for j, c := range cols {
			is := b.Schema().FieldIndices(c)
			if len(is) != 1 {
				t.Fatalf("the gateway's schema %s has no column %s", b.Schema(), c)
			}
			idx[j] = is[0]
		}
		if int(b.NumCols()) != len(cols) {
			t.Fatalf("the gateway's schema %s, want the columns %v", b.Schema(), cols)
		}
		for i := range int(b.NumRows()) {
			row := make([]any, len(cols))
			for j, k := range idx {
				row[j] = renderValue(t, b.Column(k), i)
			}
			out = append(out, row)
		}
	}
	return out
}

// renderValue is render.py's rendering of value i of a (the types of the
// Spark fixtures).
func renderValue(t *testing.T, a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i))
	case *array.Int32:
		return strconv.Itoa(int(c.Value(i)))
	case *array.Int64:
		return strconv.FormatInt(c.Value(i), 10)
	case *array.Float64:
		f := c.Value(i)
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 0):
			return map[bool]string{true: "Infinity", false: "-Infinity"}[f > 0]
		case f == math.Trunc(f):
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	case *array.String:
		return c.Value(i)
	case *array.Date32:
		return c.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return time.Unix(0, int64(c.Value(i))*int64(unit.Multiplier())).UTC().Format("2006-01-02 15:04:05.000000")
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		m := map[string]any{}
		for k := range c.NumField() {
			m[st.Field(k).Name] = renderValue(t, c.Field(k), i)
		}
		return m
	}
	t.Fatalf("no rendering for %s", a.DataType())
	return nil
}

// sparkReader is an independent reader of the result: a command taking
// a table directory and printing one readerOut line.
type sparkReader struct {
	name string
	argv []string
}

// read reads each spec (a table directory, with @version for time
// travel), one answer each.
func (r sparkReader) read(t *testing.T, specs ...string) []readerOut {
	t.Helper()
	cmd := exec.Command(r.argv[0], append(r.argv[1:], specs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", r.name, err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	var outs []readerOut
	for sc.Scan() {
		var o readerOut
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("%s: %v: %s", r.name, err, sc.Bytes())
		}
		outs = append(outs, o)
	}
	if len(outs) != len(specs) {
		t.Fatalf("%s: %d answers for %d tables\n%s", r.name, len(outs), len(specs), stderr.String())
	}
	return outs
}

// sparkReaders are delta-rs (FLIGHTGW_DELTALAKE or the worktree's
// .venv-delta) and Delta Kernel Java (only when FLIGHTGW_DELTA_KERNEL names
// its classpath file, as make delta-check sets it: a JVM compiling
// Read.java takes seconds, too many for every go test run).
func sparkReaders(t *testing.T) []sparkReader {
	var rs []sparkReader
	if py := deltaPython(t); py != "" {
		rs = append(rs, sparkReader{name: "deltalake", argv: []string{py, "../../integration/delta/read_table.py"}})
	} else {
		t.Log("no deltalake (FLIGHTGW_DELTALAKE or .venv-delta): delta-rs's reading is not checked")
	}
	cpFile := os.Getenv("FLIGHTGW_DELTA_KERNEL")
	if cpFile == "" {
		t.Log("no FLIGHTGW_DELTA_KERNEL: Delta Kernel's reading is not checked")
		return rs
	}
	cp, err := os.ReadFile(cpFile)
	if errors.Is(err, os.ErrNotExist) || err != nil {
		t.Fatalf("FLIGHTGW_DELTA_KERNEL: %v", err)
	}
	return append(rs, sparkReader{name: "delta-kernel", argv: []string{"java", "-cp", strings.TrimSpace(string(cp)), "../../integration/delta/java/Read.java"}})
}

// checkRowIDs: the gateway's append after Spark's version v of a
// row-tracked table gives its files fresh row ids past Spark's high-water
// mark, the version as their default commit version, and moves the mark.
func checkRowIDs(t *testing.T, dir string, v int64) {
	t.Helper()
	mark := func(v int64) int64 {
		for _, l := range logLines(t, dir, v) {
			if raw, ok := l["domainMetadata"]; ok {
				var d struct{ Domain, Configuration string }
				var c struct{ RowIDHighWaterMark *int64 }
				if json.Unmarshal(raw, &d) == nil && d.Domain == "delta.rowTracking" && json.Unmarshal([]byte(d.Configuration), &c) == nil && c.RowIDHighWaterMark != nil {
					return *c.RowIDHighWaterMark
				}
			}
		}
		t.Fatalf("version %d has no delta.rowTracking high-water mark", v)
		return 0
	}
	next := mark(v) + 1
	for _, l := range logLines(t, dir, v+1) {
		raw, ok := l["add"]
		if !ok {
			continue
		}
		var a struct {
			BaseRowID, DefaultRowCommitVersion *int64
			Stats                              string
		}
		var st struct{ NumRecords int64 }
		if err := json.Unmarshal(raw, &a); err != nil || json.Unmarshal([]byte(a.Stats), &st) != nil {
			t.Fatalf("add %s: %v", raw, err)
		}
		if a.BaseRowID == nil || *a.BaseRowID != next || a.DefaultRowCommitVersion == nil || *a.DefaultRowCommitVersion != v+1 {
			t.Errorf("add %s: want baseRowId %d and defaultRowCommitVersion %d", raw, next, v+1)
		}
		next += st.NumRecords
	}
	if got := mark(v + 1); got != next-1 {
		t.Errorf("the high-water mark after the gateway's append is %d, want %d", got, next-1)
	}
}

// TestSparkV2CheckpointWritten: on Spark's v2Checkpoint tables
// (delta.checkpointInterval 4, Spark's UUID-named checkpoint at 4) the
// gateway's appends at 7 and 8 leave at 8 a UUID-named V2 checkpoint of
// its own: a Parquet top-level file with one checkpointMetadata and one
// sidecar action, the adds and removes in that sidecar, _last_checkpoint
// at 8. With every commit before 8 and Spark's checkpoint deleted, the
// gateway (a fresh provider), delta-rs and Delta Kernel read every row
// from it.
func TestSparkV2CheckpointWritten(t *testing.T) {
	for _, name := range []string{"v2checkpoint_json", "v2checkpoint_parquet"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			wh := t.TempDir()
			dir := filepath.Join(wh, "spark", name)
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(sparkFixtures, name))); err != nil {
				t.Fatal(err)
			}
			var want sparkExpected
			if err := json.Unmarshal(mustRead(t, filepath.Join(dir, "expected.json")), &want); err != nil {
				t.Fatal(err)
			}
			if want.Version != 6 {
				t.Fatalf("the fixture is at version %d; the test wants Spark's 6 (checkpoint interval 4)", want.Version)
			}
			p := openLocal(t, wh)
			id := ident("spark", name)
			bs, _, err := scanAll(t, p, id)
			if err != nil {
				t.Fatal(err)
			}
			for v := int64(7); v <= 8; v++ {
				var rs []catalogs.WriteReceipt
				for _, b := range bs {
					r, err := p.WriteBatch(ctx, id, b)
					if err != nil {
						t.Fatal(err)
					}
					rs = append(rs, r)
				}
				if out, err := p.Commit(ctx, id, rs); err != nil || out.SnapshotID != v {
					t.Fatalf("append: %+v, %v; want version %d", out, err, v)
				}
			}
			if err := p.Close(); err != nil { // waits for the checkpoint
				t.Fatal(err)
			}
			logDir := filepath.Join(dir, "_delta_log")
			var top string
			ents, err := os.ReadDir(logDir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), dcodec.CommitName(8)[:20]+".checkpoint.") {
					if top != "" {
						t.Fatalf("two checkpoints at 8: %s, %s", top, e.Name())
					}
					top = e.Name()
				}
			}
			if !uuidCheckpoint.MatchString(top) {
				t.Fatalf("checkpoint at 8: %q, want a UUID-named Parquet one", top)
			}
			acts, err := dcodec.ParseCheckpointParquet(ctx, top, mustRead(t, filepath.Join(logDir, top)))
			if err != nil {
				t.Fatal(err)
			}
			var sidecars []string
			var metas, files int
			for _, a := range acts {
				switch {
				case a.Sidecar != nil:
					sidecars = append(sidecars, a.Sidecar.Path)
				case a.CheckpointMetadata != nil && a.CheckpointMetadata.Version == 8:
					metas++
				case a.Add != nil || a.Remove != nil:
					files++
				}
			}
			if len(sidecars) != 1 || metas != 1 || files != 0 {
				t.Fatalf("top-level file: sidecars %v, %d checkpointMetadata at 8, %d file actions; want one, one, none", sidecars, metas, files)
			}
			side, err := dcodec.ParseCheckpointParquet(ctx, sidecars[0], mustRead(t, filepath.Join(logDir, dcodec.SidecarDir, sidecars[0])))
			if err != nil {
				t.Fatal(err)
			}
			var adds int
			for _, a := range side {
				if a.Add != nil {
					adds++
				}
			}
			lc, err := dcodec.ParseLastCheckpoint(mustRead(t, filepath.Join(logDir, dcodec.LastCheckpointName)))
			if err != nil || lc.Version != 8 || *lc.NumOfAddFiles != int64(adds) {
				t.Fatalf("_last_checkpoint %+v, %v; want version 8 with the sidecar's %d adds", lc, err, adds)
			}
			// Only the gateway's checkpoint and the commit at 8 are left.
			for _, e := range ents {
				n := e.Name()
				if (strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".crc") || strings.Contains(n, ".checkpoint.")) && n != top && n != dcodec.CommitName(8) {
					if err := os.Remove(filepath.Join(logDir, n)); err != nil {
						t.Fatal(err)
					}
				}
			}
			thrice := sparkExpected{Version: 8, Columns: want.Columns}
			for _, r := range want.Rows {
				thrice.Rows = append(thrice.Rows, r, r, r)
			}
			bs3, _, err := scanAll(t, openLocal(t, wh), id)
			if err != nil {
				t.Fatalf("scan from the gateway's checkpoint: %v", err)
			}
			compareRendered(t, "the gateway's read from its checkpoint", renderSpark(t, bs3, want.Columns), thrice)
			for _, r := range sparkReaders(t) {
				got := r.read(t, dir)[0]
				if got.Version != 8 {
					t.Errorf("%s reads version %d, want 8", r.name, got.Version)
				}
				compareRendered(t, r.name+"'s read from the gateway's checkpoint", got.Rows, sameColumns(t, r.name, got.Columns, thrice))
			}
		})
	}
}

var uuidCheckpoint = regexp.MustCompile(`^\d{20}\.checkpoint\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.parquet$`)

// checkInCommitTimestamp: the gateway's commit after Spark's version v of
// a table with in-commit timestamps has commitInfo first, with an
// inCommitTimestamp past version v's (and timestamp equal to it).
func checkInCommitTimestamp(t *testing.T, dir string, v int64) {
	t.Helper()
	ict := func(v int64) (int64, int64) {
		lines := logLines(t, dir, v)
		var ci struct{ InCommitTimestamp, Timestamp *int64 }
		raw, ok := lines[0]["commitInfo"]
		if !ok || json.Unmarshal(raw, &ci) != nil || ci.InCommitTimestamp == nil || ci.Timestamp == nil {
			t.Fatalf("version %d: first action %v, want commitInfo with inCommitTimestamp", v, lines[0])
		}
		return *ci.InCommitTimestamp, *ci.Timestamp
	}
	prev, _ := ict(v)
	got, ts := ict(v + 1)
	if got <= prev || ts != got {
		t.Errorf("version %d: inCommitTimestamp %d (timestamp %d), want past version %d's %d and timestamp equal", v+1, got, ts, v, prev)
	}
}
