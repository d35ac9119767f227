package paimon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// compactTable makes a table of opts and commits n overlapping writes to
// it: commit i writes ids 5i..5i+9 (a primary-key table updates five keys
// of the commit before).
func compactTable(t *testing.T, name string, opts map[string]string, n int) (*paimon.Provider, string, catalogs.TableIdent) {
	t.Helper()
	// Options other than the layout's are the catalog's table defaults.
	create, defaults := map[string]string{}, map[string]string{}
	for k, v := range opts {
		switch k {
		case "bucket", "bucket-key", "primary-key", "partition":
			create[k] = v
		default:
			defaults[paimon.PropTableDefaultPrefix+k] = v
		}
	}
	p, wh := openLocal(t, defaults)
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: name}
	if _, err := p.CreateTable(context.Background(), id, sampleSchema, create); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		commitRows(t, p, id, fmt.Sprintf("c%d", i), int64(5*i), 10, i)
	}
	return p, wh, id
}

func commitRows(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, commitID string, from, n int64, commit int) {
	t.Helper()
	b := sampleBatch(rowsFrom(from, n, commit))
	defer b.Release()
	r, err := p.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(context.Background(), id, commitID, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
}

// snapshotAt reads snapshot n of a table directory as JSON.
func snapshotAt(t *testing.T, dir string, n int64) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "snapshot", fmt.Sprintf("snapshot-%d", n)))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// planned is the number of data files a scan of snapshot snap (0: the
// latest) reads, and its rows.
func planned(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, snap int64) (int, []string) {
	t.Helper()
	req := catalogs.ScanRequest{Columns: []string{"id", "name", "p"}}
	if snap > 0 {
		req.SnapshotID = &snap
	}
	res, err := p.Scan(context.Background(), id, req)
	if err != nil {
		t.Fatal(err)
	}
	n := res.FilesPlanned
	res.Reader.Release()
	if snap == 0 {
		return n, scanRendered(t, p, id)
	}
	return n, scanSnapshotRendered(t, p, id, snap)
}

func scanSnapshotRendered(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, snap int64) []string {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{Columns: []string{"id", "name", "p"}, SnapshotID: &snap})
	if err != nil {
		t.Fatal(err)
	}
	return renderReader(t, res)
}

func maintain(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, req catalogs.MaintainRequest) catalogs.TaskReport {
	t.Helper()
	rep, err := p.Maintain(context.Background(), id, req)
	if err != nil {
		t.Fatalf("Maintain %v: %v", req.Tasks, err)
	}
	if len(rep.Tasks) != 1 {
		t.Fatalf("Maintain %v reported %d tasks", req.Tasks, len(rep.Tasks))
	}
	return rep.Tasks[0]
}

// TestPaimonCompact: a bucket compacts when its sorted runs pass
// num-sorted-run.compaction-trigger (append: its small files reach
// compaction.min.file-num), not before unless full_compact is asked; the
// COMPACT snapshot reads the same rows from fewer files, the snapshot
// before it reads as before (time travel), a dry run changes nothing, a
// write after the compaction wins over the compacted rows, and pypaimon
// reads the compacted table.
func TestPaimonCompact(t *testing.T) {
	pk := map[string]string{"primary-key": "id", "bucket": "2"}
	for _, c := range []struct {
		name    string
		opts    map[string]string
		commits int
		full    bool // full_compact needed: the trigger is not passed
		after   int  // files a scan plans after the compaction
	}{
		{name: "c_pk", opts: pk, commits: 7, after: 2},
		{name: "c_pk_few", opts: pk, commits: 4, full: true, after: 2},
		{name: "c_pk_part", opts: map[string]string{"primary-key": "id,p", "partition": "p", "bucket": "2"}, commits: 6, after: 4},
		{name: "c_pk_trigger", opts: map[string]string{"primary-key": "id", "bucket": "1", "num-sorted-run.compaction-trigger": "2", "num-levels": "3"}, commits: 3, after: 1},
		{name: "c_append", opts: map[string]string{"partition": "p"}, commits: 5, after: 2},
		{name: "c_append_few", opts: map[string]string{"partition": "p", "compaction.min.file-num": "10"}, commits: 6, full: true, after: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, wh, id := compactTable(t, c.name, c.opts, c.commits)
			dir := filepath.Join(wh, "default.db", c.name)
			beforeFiles, want := planned(t, p, id, 0)
			pre := int64(c.commits)
			task := catalogs.TaskCompact
			if c.full {
				if tr := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}}); tr.Committed || tr.RewrittenFiles != 0 {
					t.Fatalf("compact below the trigger: %+v, want nothing done", tr)
				}
				task = catalogs.TaskFullCompact
			}
			files := tableFiles(t, dir)
			dry := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{task}, DryRun: true})
			if dry.Committed || dry.RewrittenFiles != beforeFiles {
				t.Errorf("dry run: %+v, want %d files to rewrite", dry, beforeFiles)
			}
			if got := tableFiles(t, dir); !slices.Equal(got, files) {
				t.Fatalf("a dry run changed files: %v", diff(files, got))
			}
			tr := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{task}})
			if !tr.Committed || tr.RewrittenFiles != beforeFiles || tr.AddedFiles != c.after {
				t.Fatalf("compaction: %+v, want %d files rewritten into %d", tr, beforeFiles, c.after)
			}
			s := snapshotAt(t, dir, pre+1)
			if s["commitKind"] != "COMPACT" || s["commitIdentifier"] == nil {
				t.Errorf("snapshot %d: kind %v, want COMPACT", pre+1, s["commitKind"])
			}
			if got, ok := s["totalRecordCount"].(float64); !ok || int(got) != len(want) {
				t.Errorf("snapshot %d: totalRecordCount %v, want %d", pre+1, s["totalRecordCount"], len(want))
			}
			n, got := planned(t, p, id, 0)
			if n != c.after || !slices.Equal(got, want) {
				t.Errorf("after compaction: %d files, rows %v; want %d files, rows %v", n, got, c.after, want)
			}
			if n, got := planned(t, p, id, pre); n != beforeFiles || !slices.Equal(got, want) {
				t.Errorf("snapshot %d after compaction: %d files, %d rows; want %d files, %v", pre, n, len(got), beforeFiles, want)
			}
			if again := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}}); again.Committed {
				t.Errorf("a second compaction committed: %+v", again)
			}
			pypaimonReads(t, wh, c.name, want)
			// A write after the compaction orders after the compacted rows.
			commitRows(t, p, id, "later", 0, 3, 99)
			later := scanRendered(t, p, id)
			if _, ok := c.opts["primary-key"]; ok {
				for _, r := range later {
					if strings.HasPrefix(r, "id=1,") && !strings.Contains(r, "c99-1") {
						t.Errorf("after a later write key 1 reads %q, want the later row", r)
					}
				}
				if len(later) != len(want) {
					t.Errorf("rows after the later write: %d, want %d", len(later), len(want))
				}
			} else if len(later) != len(want)+3 {
				t.Errorf("rows after the later write: %d, want %d", len(later), len(want)+3)
			}
		})
	}
}

// TestPaimonCompactAbandoned: a compaction whose input files an
// overwrite deletes while it runs gives up, reports why and removes the
// files it wrote; one that meets an append retries and keeps the
// appended rows.
func TestPaimonCompactAbandoned(t *testing.T) {
	for _, overwrite := range []bool{true, false} {
		t.Run(fmt.Sprintf("overwrite=%v", overwrite), func(t *testing.T) {
			p, wh, id := compactTable(t, "c_race", map[string]string{"primary-key": "id", "bucket": "1"}, 6)
			dir := filepath.Join(wh, "default.db", "c_race")
			ctx := context.Background()
			b := sampleBatch(rowsFrom(1000, 4, 50))
			r, err := p.WriteBatch(ctx, id, b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			var raced atomic.Bool
			paimon.SetBeforeAttempt(p, func() {
				if raced.Swap(true) {
					return // the racer's own attempt, or a retry
				}
				if overwrite {
					_, err = p.CommitOverwrite(ctx, id, "racer", []catalogs.WriteReceipt{r})
				} else {
					_, err = p.CommitOnce(ctx, id, "racer", []catalogs.WriteReceipt{r})
				}
			})
			_, want := planned(t, p, id, 0)
			before := dataFiles(t, dir)
			tr := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}})
			if err != nil {
				t.Fatalf("the racing commit: %v", err)
			}
			got := scanRendered(t, p, id)
			if overwrite {
				if tr.Committed || !strings.Contains(tr.Abandoned, "deleted by a concurrent commit") {
					t.Errorf("compaction beside an overwrite: %+v, want abandoned", tr)
				}
				if len(got) != 4 {
					t.Errorf("after the overwrite: %d rows, want 4", len(got))
				}
				var extra []string
				for _, f := range dataFiles(t, dir) {
					if !slices.Contains(before, f) && !strings.Contains(string(r.Metadata), filepath.Base(f)) {
						extra = append(extra, f)
					}
				}
				if len(extra) > 0 {
					t.Errorf("an abandoned compaction left files %v", extra)
				}
				return
			}
			if !tr.Committed {
				t.Fatalf("compaction beside an append: %+v, want committed", tr)
			}
			if len(got) != len(want)+4 {
				t.Errorf("after compaction and append: %d rows, want %d", len(got), len(want)+4)
			}
			if n, _ := planned(t, p, id, 0); n != 2 {
				t.Errorf("after compaction and append: %d files, want the compacted one and the appended one", n)
			}
		})
	}
}

// TestPaimonCompactBesideWriters: eight writers append distinct keys to a
// primary-key table while compaction runs in a loop: no writer fails,
// every row lands once, and the compactions leave one file a bucket.
func TestPaimonCompactBesideWriters(t *testing.T) {
	p, _, id := compactTable(t, "c_busy", map[string]string{"primary-key": "id", "bucket": "2", "num-sorted-run.compaction-trigger": "2"}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				from := int64(10_000*(w+1) + 10*i)
				b := sampleBatch(rowsFrom(from, 10, i))
				r, err := p.WriteBatch(ctx, id, b)
				b.Release()
				if err == nil {
					_, err = p.CommitOnce(ctx, id, fmt.Sprintf("w%d-%d", w, i), []catalogs.WriteReceipt{r})
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	done := make(chan int)
	go func() {
		commits := 0
		for ctx.Err() == nil {
			rep, err := p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}})
			if err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("compaction: %w", err)
			}
			if err == nil && rep.Tasks[0].Committed {
				commits++
			}
		}
		done <- commits
	}()
	wg.Wait()
	cancel()
	commits := <-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := scanRendered(t, p, id)
	if len(got) != 10+8*8*10 {
		t.Errorf("rows = %d, want %d", len(got), 10+8*8*10)
	}
	seen := map[string]bool{}
	for _, r := range got {
		k := r[:strings.Index(r, ",")]
		if seen[k] {
			t.Errorf("key %s read twice", k)
		}
		seen[k] = true
	}
	if commits == 0 {
		t.Log("no compaction landed beside the writers")
	}
	tr := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskFullCompact}})
	if n, rows := planned(t, p, id, 0); n > 2 || !slices.Equal(rows, got) {
		t.Errorf("after a full compaction (%+v): %d files, %d rows; want at most 2 files, %d rows", tr, n, len(rows), len(got))
	}
	t.Logf("%d compactions landed beside the writers", commits)
}

// TestPaimonCompactRefused: an option Paimon would refuse is named; a
// write-only table (compacted by its own job) is left to that job by
// compact, and compacted by an operator's full_compact.
func TestPaimonCompactRefused(t *testing.T) {
	wo, _, woID := compactTable(t, "c_write_only", map[string]string{"primary-key": "id", "bucket": "1", "write-only": "true"}, 7)
	if tr := maintain(t, wo, woID, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}}); tr.Committed || !strings.Contains(tr.Abandoned, "write-only") {
		t.Errorf("compact of a write-only table: %+v, want it left to its compaction job", tr)
	}
	if tr := maintain(t, wo, woID, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskFullCompact}}); !tr.Committed {
		t.Errorf("full_compact of a write-only table: %+v, want it committed", tr)
	}
	p, _, id := compactTable(t, "c_bad", map[string]string{"primary-key": "id", "bucket": "1", "num-levels": "1"}, 2)
	_, err := p.Maintain(context.Background(), id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskFullCompact}})
	if catalogs.Kind(err) != catalogs.ErrFailedPrecondition || !strings.Contains(err.Error(), "num-levels") {
		t.Errorf("num-levels 1: %v, want FailedPrecondition naming num-levels", err)
	}
}

// renderReader renders a scan's rows, sorted (scanRendered's rendering).
func renderReader(t *testing.T, res *catalogs.ScanResult) []string {
	t.Helper()
	defer res.Reader.Release()
	var out []string
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		ids := b.Column(0).(*array.Int64)
		names := b.Column(1).(*array.String)
		ps := b.Column(2).(*array.String)
		for i := range int(b.NumRows()) {
			r := sampleRow{id: ids.Value(i), p: ps.Value(i)}
			if names.IsValid(i) {
				n := names.Value(i)
				r.name = &n
			}
			out = append(out, r.render())
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// setSchemaOptions sets options in a table's schema-0, as Paimon Java's
// ALTER would have (the backend does not write these tables itself).
func setSchemaOptions(t *testing.T, dir string, opts map[string]string) {
	t.Helper()
	f := filepath.Join(dir, "schema", "schema-0")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	o, _ := m["options"].(map[string]any)
	if o == nil {
		o = map[string]any{}
	}
	for k, v := range opts {
		o[k] = v
	}
	m["options"] = o
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPaimonCompactMergeEngines: a partial-update or aggregation table
// (its files written as a deduplicate table's, then the engine set, as a
// Java writer would leave them) compacts into rows its merge engine
// reads the same, where deduplicate would read others (a later null name
// does not replace the earlier one); a first-row table is refused naming
// the merge engine.
func TestPaimonCompactMergeEngines(t *testing.T) {
	for _, c := range []struct {
		name string
		opts map[string]string
		err  string
	}{
		{name: "e_partial", opts: map[string]string{"merge-engine": "partial-update"}},
		{name: "e_agg", opts: map[string]string{"merge-engine": "aggregation", "fields.name.aggregate-function": "first_non_null_value"}},
		{name: "e_first", opts: map[string]string{"merge-engine": "first-row"}, err: "merge-engine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, wh, id := compactTable(t, c.name, map[string]string{"primary-key": "id", "bucket": "1"}, 6)
			// Keys 1 to 3 written again without a name.
			var nulls []sampleRow
			for i := range int64(3) {
				nulls = append(nulls, sampleRow{id: i + 1, p: fmt.Sprintf("p%d", (i+1)%2)})
			}
			b := sampleBatch(nulls)
			r, err := p.WriteBatch(context.Background(), id, b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.CommitOnce(context.Background(), id, "nulls", []catalogs.WriteReceipt{r}); err != nil {
				t.Fatal(err)
			}
			dedup := scanRendered(t, p, id)
			setSchemaOptions(t, filepath.Join(wh, "default.db", c.name), c.opts)
			if c.err != "" {
				_, err := p.Maintain(context.Background(), id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}})
				if catalogs.Kind(err) != catalogs.ErrFailedPrecondition || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("compact: %v, want FailedPrecondition naming %s", err, c.err)
				}
				return
			}
			want := scanRendered(t, p, id)
			if slices.Equal(want, dedup) {
				t.Fatalf("%v reads as deduplicate: the test shows nothing", c.opts)
			}
			tr := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}})
			if !tr.Committed {
				t.Fatalf("compact: %+v", tr)
			}
			if n, got := planned(t, p, id, 0); n != 1 || !slices.Equal(got, want) {
				t.Errorf("after compaction: %d files, rows %v; want 1 file, %v", n, got, want)
			}
		})
	}
}

// TestPaimonCompactCrashLeavesNoOrphan: the warehouse as a kill -9
// leaves it in the middle of a compaction (its files written, its
// snapshot not) reads as before after a restart; the orphan reclaimer
// deletes exactly the compaction's files, and the next compaction lands.
func TestPaimonCompactCrashLeavesNoOrphan(t *testing.T) {
	p, wh, id := compactTable(t, "c_crash", map[string]string{"primary-key": "id", "bucket": "2"}, 7)
	ctx := context.Background()
	dir := filepath.Join(wh, "default.db", "c_crash")
	want := scanRendered(t, p, id)
	before := tableFiles(t, dir)
	crashed := filepath.Join(t.TempDir(), "wh")
	paimon.SetBeforeAttempt(p, func() {
		if err := os.CopyFS(crashed, os.DirFS(wh)); err != nil {
			t.Error(err)
		}
	})
	maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}})
	cdir := filepath.Join(crashed, "default.db", "c_crash")
	var written []string
	for _, f := range tableFiles(t, cdir) {
		if !slices.Contains(before, f) {
			written = append(written, f)
		}
	}
	if len(written) == 0 {
		t.Fatal("the crash point holds no file of the compaction")
	}
	restarted, err := paimon.Open(ctx, "lake", map[string]string{paimon.PropWarehouse: crashed, paimon.PropCreateNamespaces: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if got := scanRendered(t, restarted, id); !slices.Equal(got, want) {
		t.Fatalf("after the crash the table reads %v, want %v", got, want)
	}
	backdate(t, cdir, 2*time.Hour)
	if _, err := restarted.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour}); err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	after := tableFiles(t, cdir)
	for _, f := range before {
		if !slices.Contains(after, f) {
			t.Errorf("the reclaimer deleted %s, a file of the table", f)
		}
	}
	for _, f := range written {
		if slices.Contains(after, f) {
			t.Errorf("the crashed compaction's %s is left", f)
		}
	}
	if tr := maintain(t, restarted, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}}); !tr.Committed {
		t.Errorf("the compaction after the restart: %+v", tr)
	}
	if got := scanRendered(t, restarted, id); !slices.Equal(got, want) {
		t.Errorf("after the compaction the table reads %v, want %v", got, want)
	}
}

// TestPaimonCompactThenExpire: once the snapshots before a compaction
// expire, the files it replaced are deleted and the ones it wrote kept;
// the table reads as before, and pypaimon reads it.
func TestPaimonCompactThenExpire(t *testing.T) {
	p, wh, id := compactTable(t, "c_expire", map[string]string{"primary-key": "id", "bucket": "2",
		"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"}, 7)
	dir := filepath.Join(wh, "default.db", "c_expire")
	want := scanRendered(t, p, id)
	old := dataFiles(t, dir)
	if tr := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}}); !tr.Committed {
		t.Fatalf("compact: %+v", tr)
	}
	var compacted []string
	for _, f := range dataFiles(t, dir) {
		if !slices.Contains(old, f) {
			compacted = append(compacted, f)
		}
	}
	// Past expiry's own floor (twice the commit loop's timeout).
	paimon.SetNow(p, func() time.Time { return time.Now().Add(10 * time.Minute) })
	tr := maintain(t, p, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskExpireSnapshots}})
	// Snapshot 8 is the compaction's, 9 the merge of its manifests
	// (compactManifests): only 9 is retained.
	if !tr.Committed || len(tr.ExpiredSnapshots) != 8 || tr.DataFiles != len(old) {
		t.Fatalf("expiry after the compaction: %+v, want snapshots 1-8 and the %d replaced files deleted", tr, len(old))
	}
	if got := dataFiles(t, dir); !slices.Equal(got, compacted) {
		t.Errorf("data files after expiry: %v, want the compacted %v", got, compacted)
	}
	if got := scanRendered(t, p, id); !slices.Equal(got, want) {
		t.Errorf("after expiry the table reads %v, want %v", got, want)
	}
	pypaimonReads(t, wh, "c_expire", want)
}
