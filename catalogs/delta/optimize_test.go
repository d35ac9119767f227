package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
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
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

var partSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// partBatch is rows [from, from+n) of partSchema, p cycling over a, b
// and null.
func partBatch(from, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, partSchema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		switch i % 3 {
		case 0:
			b.Field(1).(*array.StringBuilder).Append("a")
		case 1:
			b.Field(1).(*array.StringBuilder).Append("b")
		default:
			b.Field(1).(*array.StringBuilder).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

func appendBatch(t *testing.T, p *delta.Provider, id catalogs.TableIdent, b arrow.RecordBatch) {
	t.Helper()
	defer b.Release()
	ctx := context.Background()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Error(err)
	}
}

// ids reads the table's ids at version (negative: the latest), sorted.
func ids(t *testing.T, p *delta.Provider, id catalogs.TableIdent, version int64) []int64 {
	t.Helper()
	req := catalogs.ScanRequest{}
	if version >= 0 {
		req.SnapshotID = &version
	}
	res, err := p.Scan(context.Background(), id, req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	var out []int64
	for res.Reader.Next() {
		out = append(out, res.Reader.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func seq(from, n int64) []int64 {
	out := make([]int64, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, i)
	}
	return out
}

func optimize(t *testing.T, p *delta.Provider, id catalogs.TableIdent, dry bool) catalogs.TaskReport {
	t.Helper()
	rep, err := p.Maintain(context.Background(), id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskOptimize}, DryRun: dry})
	if err != nil {
		t.Fatalf("optimize: %v", err)
	}
	return rep.Tasks[0]
}

// liveFiles is the table's live adds at its latest version.
func liveFiles(t *testing.T, p *delta.Provider, dir string) []dcodec.AddFile {
	t.Helper()
	var out []dcodec.AddFile
	snap, err := dcodec.Load(context.Background(), dirLog(dir), -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snap.Files {
		out = append(out, *f)
	}
	return out
}

// dirLog is a table's _delta_log on local disk (dcodec.Log).
type dirLog string

func (d dirLog) List(context.Context) ([]string, error) {
	es, err := os.ReadDir(filepath.Join(string(d), "_delta_log"))
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out, err
}

func (d dirLog) Read(_ context.Context, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), "_delta_log", name))
}

// TestOptimize: 24 small appends (partitioned by p, and not) leave 24
// files per partition or fewer after OPTIMIZE: one commit whose
// commitInfo says OPTIMIZE, every remove and add with dataChange false,
// the same rows; a version before it still reads (its files are only
// tombstoned); a dry run commits nothing; a second run finds nothing to
// do. With a small delta.targetFileSize the rows land in more than one
// file per partition, none much above the target.
func TestOptimize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   map[string]string
		parts  int   // distinct partitions
		target int64 // 0: the default
		rows   int64 // per append
	}{
		{name: "flat", rows: 50},
		{name: "partitioned", opts: map[string]string{"partition": "p"}, parts: 3, rows: 50},
		{name: "target", opts: map[string]string{"partition": "p", delta.PropTableTargetFileSize: "4096"}, parts: 3, target: 4096, rows: 2000},
		{name: "mapped", opts: map[string]string{"partition": "p", dcodec.PropColumnMappingMode: "name"}, parts: 3, rows: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := t.TempDir()
			p := openLocal(t, wh)
			ctx := context.Background()
			id := ident("default", "opt")
			if _, err := p.CreateTable(ctx, id, partSchema, tc.opts); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(wh, "default", "opt")
			const n = 24
			rows := tc.rows
			for i := range int64(n) {
				b := partBatch(i*rows, rows)
				if tc.target > 0 {
					// Ids in order pack to a few bytes (delta-packed): shuffled,
					// their files reach a small target.
					ids := b.Column(0).(*array.Int64).Int64Values()
					rand.New(rand.NewPCG(uint64(i), 1)).Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
				}
				appendBatch(t, p, id, b)
			}
			before := liveFiles(t, p, dir)
			pre := mustSpec(t, p, id).CurrentSnapshotID
			dry := optimize(t, p, id, true)
			if dry.Committed || dry.RewrittenFiles != len(before) {
				t.Fatalf("dry run: %+v, want %d files to rewrite and no commit", dry, len(before))
			}
			if now := mustSpec(t, p, id).CurrentSnapshotID; *now != *pre {
				t.Fatalf("dry run moved the table from version %d to %d", *pre, *now)
			}
			tr := optimize(t, p, id, false)
			if !tr.Committed || tr.RewrittenFiles != len(before) || tr.Abandoned != "" {
				t.Fatalf("optimize: %+v, want %d files rewritten", tr, len(before))
			}
			after := liveFiles(t, p, dir)
			if len(after) != tr.AddedFiles || len(after) >= len(before) {
				t.Fatalf("live files %d after (report %d), %d before: want fewer", len(after), tr.AddedFiles, len(before))
			}
			if tc.target == 0 && len(after) != max(tc.parts, 1) {
				t.Errorf("live files %d, want one per partition (%d)", len(after), max(tc.parts, 1))
			}
			if tc.target > 0 && len(after) <= tc.parts {
				t.Errorf("live files %d with target %d, want more than one in some partition", len(after), tc.target)
			}
			for _, f := range after {
				if f.DataChange {
					t.Errorf("add %s: dataChange true", f.Path)
				}
				if tc.target > 0 && f.Size > 3*tc.target {
					t.Errorf("add %s: %d bytes, target %d", f.Path, f.Size, tc.target)
				}
			}
			if got := ids(t, p, id, -1); !slices.Equal(got, seq(0, n*rows)) {
				t.Fatalf("after optimize: %d rows, want ids 0..%d once each", len(got), n*rows-1)
			}
			if got := ids(t, p, id, *pre); !slices.Equal(got, seq(0, n*rows)) {
				t.Fatalf("time travel to version %d: %d rows", *pre, len(got))
			}
			v := *pre + 1
			var removes, adds int
			for _, a := range logLines(t, dir, v) {
				if raw, ok := a["commitInfo"]; ok {
					var ci struct {
						Operation     string `json:"operation"`
						IsBlindAppend *bool  `json:"isBlindAppend"`
					}
					if err := json.Unmarshal(raw, &ci); err != nil || ci.Operation != "OPTIMIZE" || ci.IsBlindAppend == nil || *ci.IsBlindAppend {
						t.Errorf("version %d commitInfo %s: want operation OPTIMIZE, isBlindAppend false", v, raw)
					}
				}
				for _, k := range []string{"add", "remove"} {
					if raw, ok := a[k]; ok {
						var x struct {
							DataChange bool `json:"dataChange"`
						}
						if err := json.Unmarshal(raw, &x); err != nil || x.DataChange {
							t.Errorf("version %d %s with dataChange true: %s", v, k, raw)
						}
						if k == "add" {
							adds++
						} else {
							removes++
						}
					}
				}
			}
			if removes != len(before) || adds != len(after) {
				t.Errorf("version %d: %d removes, %d adds; want %d and %d", v, removes, adds, len(before), len(after))
			}
			if tc.opts[dcodec.PropColumnMappingMode] != "" {
				snap, err := dcodec.Load(ctx, dirLog(dir), -1)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range after {
					rel, _ := dcodec.DecodePath(f.Path)
					checkFieldIDs(t, filepath.Join(dir, rel), snap.Schema)
				}
			}
			if again := optimize(t, p, id, false); again.Committed || again.RewrittenFiles != 0 && tc.target == 0 {
				t.Errorf("second optimize: %+v, want nothing to do", again)
			}
		})
	}
}

// TestOptimizeDeletionVectors: the rows a deletion vector deletes are
// not carried over; the new files have no deletion vector; a file alone
// in its partition but with a deletion vector is rewritten too.
func TestOptimizeDeletionVectors(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "dv")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	appendBatch(t, p, id, catalogtest.Batch(0, 10))
	dir := filepath.Join(wh, "default", "dv")
	var add dcodec.AddFile
	if err := json.Unmarshal(logLines(t, dir, 1)[2]["add"], &add); err != nil {
		t.Fatal(err)
	}
	ts := int64(1)
	dvAdd := add
	dvAdd.DeletionVector = inlineDV([]uint16{1, 3, 9})
	enc, err := dcodec.EncodeCommit([]dcodec.Action{
		{Protocol: &dcodec.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{dcodec.FeatureDeletionVectors}, WriterFeatures: []string{dcodec.FeatureDeletionVectors}}},
		{Remove: &dcodec.RemoveFile{Path: add.Path, DeletionTimestamp: &ts, DataChange: true}},
		{Add: &dvAdd},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", dcodec.CommitName(2)), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 2, 4, 5, 6, 7, 8}
	if tr := optimize(t, p, id, false); !tr.Committed || tr.RewrittenFiles != 1 {
		t.Fatalf("optimize of one file with a DV: %+v, want it rewritten", tr)
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	appendBatch(t, p, id, catalogtest.Batch(100, 5))
	if tr := optimize(t, p, id, false); !tr.Committed || tr.RewrittenFiles != 2 {
		t.Fatalf("second optimize: %+v, want 2 files rewritten", tr)
	}
	after := liveFiles(t, p, dir)
	if len(after) != 1 || after[0].DeletionVector != nil {
		t.Fatalf("live files %+v, want one without a deletion vector", after)
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, append(want, seq(100, 5)...)) {
		t.Fatalf("ids %v", got)
	}
	if got := ids(t, p, id, 2); !slices.Equal(got, want) {
		t.Fatalf("time travel to version 2: ids %v, want %v", got, want)
	}
}

// TestOptimizeBesideAppenders: four writers append while OPTIMIZE runs in
// a loop on another provider of the same warehouse (another gateway):
// every append lands, no writer errs, every row is there exactly once,
// and at least one optimize committed.
func TestOptimizeBesideAppenders(t *testing.T) {
	wh := t.TempDir()
	p, m := openLocal(t, wh), openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "busy")
	if _, err := p.CreateTable(ctx, id, partSchema, map[string]string{"partition": "p"}); err != nil {
		t.Fatal(err)
	}
	const writers, commits, rows = 4, 12, 20
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range int64(writers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range int64(commits) {
				appendBatch(t, p, id, partBatch((w*commits+c)*rows, rows))
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	committed, abandoned := 0, 0
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		default:
		}
		rep, err := m.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskOptimize}})
		if err != nil {
			t.Fatalf("optimize beside writers: %v", err)
		}
		if rep.Tasks[0].Committed {
			committed++
		}
		if rep.Tasks[0].Abandoned != "" {
			abandoned++
		}
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, seq(0, writers*commits*rows)) {
		t.Fatalf("%d rows, want ids 0..%d once each", len(got), writers*commits*rows-1)
	}
	if committed == 0 {
		t.Errorf("no optimize committed beside the writers")
	}
	if abandoned != 0 {
		t.Errorf("%d optimizes abandoned: appends must not conflict with a compaction", abandoned)
	}
	t.Logf("%d optimizes committed beside %d appends", committed, writers*commits)
}

// TestOptimizeConflicts: an append landing between the optimize's read
// and its commit lets it commit at the next version, the appended rows
// kept; an overwrite landing there removes the files it rewrote, so it
// is abandoned and its files deleted.
func TestOptimizeConflicts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overwrite bool
	}{{"append", false}, {"overwrite", true}} {
		t.Run(tc.name, func(t *testing.T) {
			wh := t.TempDir()
			p, other := openLocal(t, wh), openLocal(t, wh)
			ctx := context.Background()
			id := ident("default", "race")
			if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
				t.Fatal(err)
			}
			for i := range int64(3) {
				commitRows(t, p, id, i*10, 10, false) // versions 1..3
			}
			dir := filepath.Join(wh, "default", "race")
			filesBefore := dataFiles(t, dir)
			raced := false
			defer delta.SetBeforeCommitWrite(func(_ catalogs.TableIdent, v int64) {
				if v == 4 && !raced {
					raced = true
					commitRows(t, other, id, 100, 5, tc.overwrite) // takes version 4
				}
			})()
			tr := optimize(t, p, id, false)
			if !raced {
				t.Fatal("the race was not run")
			}
			if tc.overwrite {
				if tr.Committed || !strings.Contains(tr.Abandoned, "removed") {
					t.Fatalf("optimize after an overwrite: %+v, want abandoned", tr)
				}
				if got := ids(t, p, id, -1); !slices.Equal(got, seq(100, 5)) {
					t.Fatalf("ids %v, want the overwrite's", got)
				}
				// Its files are gone: only the appends' and the overwrite's remain.
				if got := dataFiles(t, dir); len(got) != len(filesBefore)+1 {
					t.Fatalf("files %v, want the %d before and the overwrite's", got, len(filesBefore))
				}
				return
			}
			if !tr.Committed {
				t.Fatalf("optimize beside an append: %+v, want committed", tr)
			}
			if got := ids(t, p, id, -1); !slices.Equal(got, append(seq(0, 30), seq(100, 5)...)) {
				t.Fatalf("ids %v, want the appends' and the racing append's", got)
			}
			if live := liveFiles(t, p, dir); len(live) != 2 {
				t.Fatalf("live files %d, want the optimized one and the racing append's", len(live))
			}
		})
	}
}

// TestOptimizeRefused: a row-tracked table refuses OPTIMIZE with
// FailedPrecondition naming the feature (rewritten rows would lose their
// row ids), and an unknown task is InvalidArgument.
func TestOptimizeRefused(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "rt")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{dcodec.PropEnableRowTracking: "true"}); err != nil {
		t.Fatal(err)
	}
	commitRows(t, p, id, 0, 5, false)
	commitRows(t, p, id, 5, 5, false)
	_, err := p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskOptimize}})
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), dcodec.FeatureRowTracking) {
		t.Fatalf("optimize of a row-tracked table: %v, want FailedPrecondition naming %q", err, dcodec.FeatureRowTracking)
	}
	_, err = p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskExpireSnapshots}})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), catalogs.TaskExpireSnapshots) {
		t.Fatalf("task %s: %v, want InvalidArgument naming it", catalogs.TaskExpireSnapshots, err)
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, seq(0, 10)) {
		t.Fatalf("ids %v", got)
	}
}

// TestCheckpointTask: the checkpoint task writes the current version's
// checkpoint, and reports nothing to do when replay starts from it.
func TestCheckpointTask(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "cp")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	for i := range int64(3) {
		commitRows(t, p, id, i*10, 10, false)
	}
	run := func() catalogs.TaskReport {
		rep, err := p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCheckpoint}})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Tasks[0]
	}
	if tr := run(); !tr.Committed {
		t.Fatalf("checkpoint task: %+v, want committed", tr)
	}
	cp := filepath.Join(wh, "default", "cp", "_delta_log", dcodec.ClassicCheckpointName(3))
	if _, err := os.Stat(cp); err != nil {
		t.Fatalf("checkpoint of version 3: %v", err)
	}
	if tr := run(); tr.Committed {
		t.Fatalf("second checkpoint task: %+v, want nothing to do", tr)
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, seq(0, 30)) {
		t.Fatalf("ids %v", got)
	}
}

// dataFiles are the table directory's files outside _delta_log.
func dataFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range tableFiles(t, dir) {
		if !strings.HasPrefix(f, "_delta_log/") {
			out = append(out, f)
		}
	}
	return out
}

// TestVacuumTask: after an OPTIMIZE, the vacuum task deletes the files it
// rewrote once their tombstones are older than
// delta.deletedFileRetentionDuration (1 week), and not before; a dry run
// lists them and deletes nothing; the rows stay.
func TestVacuumTask(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "vac")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	for i := range int64(3) {
		commitRows(t, p, id, i*10, 10, false)
	}
	if tr := optimize(t, p, id, false); !tr.Committed {
		t.Fatalf("optimize: %+v", tr)
	}
	dir := filepath.Join(wh, "default", "vac")
	ageAll(t, dir, 8*24*time.Hour)
	vacuum := func(dry bool) catalogs.TaskReport {
		t.Helper()
		rep, err := p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskVacuum}, DryRun: dry})
		if err != nil {
			t.Fatalf("vacuum: %v", err)
		}
		return rep.Tasks[0]
	}
	if tr := vacuum(false); tr.DataFiles != 0 || len(dataFiles(t, dir)) != 4 {
		t.Fatalf("vacuum within the retention: %+v, %d data files; want nothing deleted", tr, len(dataFiles(t, dir)))
	}
	later := time.Now().Add(8 * 24 * time.Hour)
	delta.SetNow(p, func() time.Time { return later })
	if tr := vacuum(true); tr.DataFiles != 3 || len(tr.Files) != 3 || len(dataFiles(t, dir)) != 4 {
		t.Fatalf("dry vacuum: %+v, %d data files; want 3 listed, none deleted", tr, len(dataFiles(t, dir)))
	}
	if tr := vacuum(false); tr.DataFiles != 3 || !tr.Committed || len(dataFiles(t, dir)) != 1 {
		t.Fatalf("vacuum: %+v, %d data files; want the 3 rewritten ones deleted", tr, len(dataFiles(t, dir)))
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, seq(0, 30)) {
		t.Fatalf("ids %v", got)
	}
}

// TestOptimizeCrashLeavesNoOrphan: an OPTIMIZE that dies between writing
// its files and its commit (a panic out of the commit's hook stands in
// for kill -9: nothing of it runs after) leaves the table as it was,
// and its files are orphans the reclaimer deletes once they are older
// than its min age; a second OPTIMIZE then compacts as usual.
func TestOptimizeCrashLeavesNoOrphan(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "crash")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	for i := range int64(4) {
		commitRows(t, p, id, i*10, 10, false)
	}
	dir := filepath.Join(wh, "default", "crash")
	before := dataFiles(t, dir)
	restore := delta.SetBeforeCommitWrite(func(catalogs.TableIdent, int64) { panic("killed") })
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the optimize did not reach its commit")
			}
		}()
		_, _ = p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskOptimize}})
	}()
	restore()
	if got := dataFiles(t, dir); len(got) != len(before)+1 {
		t.Fatalf("after the crash: files %v, want the %d before and the rewrite's", got, len(before))
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, seq(0, 40)) {
		t.Fatalf("after the crash: ids %v", got)
	}
	ageAll(t, dir, 25*time.Hour)
	rep, err := openLocal(t, wh).Reclaim(ctx, catalogs.ReclaimOptions{MinAge: 24 * time.Hour})
	if err != nil || rep.DataFiles != 1 {
		t.Fatalf("reclaim after the crash: %+v, %v; want the rewrite's one file deleted", rep, err)
	}
	if got := dataFiles(t, dir); !slices.Equal(got, before) {
		t.Fatalf("after the reclaim: files %v, want %v", got, before)
	}
	if tr := optimize(t, p, id, false); !tr.Committed || tr.RewrittenFiles != 4 {
		t.Fatalf("optimize after the crash: %+v", tr)
	}
	if got := ids(t, p, id, -1); !slices.Equal(got, seq(0, 40)) {
		t.Fatalf("ids %v", got)
	}
}
