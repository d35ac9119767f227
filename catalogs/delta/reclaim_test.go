package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// ageAll sets the modification time of every file under root to d ago.
func ageAll(t *testing.T, root string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tableFiles lists the files of a table directory, relative to it.
func tableFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func addPaths(t *testing.T, r catalogs.WriteReceipt) []string {
	t.Helper()
	var m struct{ Adds []dcodec.AddFile }
	if err := json.Unmarshal(r.Metadata, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range m.Adds {
		p, err := dcodec.DecodePath(a.Path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestVacuum: the reclaimer deletes a data file only when no retained
// version references it. Kept: live files, the live file's on-disk
// deletion vector, a file an overwrite removed while its tombstone is
// within delta.deletedFileRetentionDuration (1 week), a staged file a
// live unit of work holds, a young staged file, hidden files. Deleted: a
// staged file nothing commits, an unreferenced DV file, an interrupted
// write's temporary file in _delta_log, and the overwritten file once
// its tombstone expired.
func TestVacuum(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "vac")
	dir := filepath.Join(wh, "default", "vac")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	write := func(from int64) catalogs.WriteReceipt {
		b := catalogtest.Batch(from, 2)
		defer b.Release()
		r, err := p.WriteBatch(ctx, id, b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := write(0)
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{first}); err != nil {
		t.Fatal(err)
	}
	live := write(10)
	if _, err := p.CommitOverwrite(ctx, id, "", []catalogs.WriteReceipt{live}); err != nil {
		t.Fatal(err)
	}
	orphan, held := write(20), write(30)
	// A DV on the live file, written as Spark would (remove and re-add),
	// and a DV file nothing references.
	dvID, strayDV := uuid.New(), uuid.New()
	for _, u := range []uuid.UUID{dvID, strayDV} {
		if err := os.WriteFile(filepath.Join(dir, "deletion_vector_"+u.String()+".bin"), []byte("dv"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var add dcodec.AddFile
	if err := json.Unmarshal(logLines(t, dir, 2)[len(logLines(t, dir, 2))-1]["add"], &add); err != nil {
		t.Fatal(err)
	}
	dvAdd := add
	dvAdd.DeletionVector = &dcodec.DeletionVector{StorageType: "u", PathOrInlineDv: dcodec.EncodeZ85(dvID[:]), SizeInBytes: 2, Cardinality: 1}
	ts := time.Now().UnixMilli()
	enc, err := dcodec.EncodeCommit([]dcodec.Action{
		{Protocol: &dcodec.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{dcodec.FeatureDeletionVectors}, WriterFeatures: []string{dcodec.FeatureDeletionVectors}}},
		{Remove: &dcodec.RemoveFile{Path: add.Path, DeletionTimestamp: &ts, DataChange: true}},
		{Add: &dvAdd},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", dcodec.CommitName(3)), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"_hidden/x.parquet", ".x.parquet", "_delta_log/.00000000000000000004.json.0123.tmp"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ageAll(t, dir, 2*time.Hour)
	young := write(40)
	before := tableFiles(t, dir)
	opts := catalogs.ReclaimOptions{MinAge: time.Hour, Held: func(_ context.Context, tb catalogs.TableIdent) []catalogs.WriteReceipt {
		if tb.Name == "vac" {
			return []catalogs.WriteReceipt{held}
		}
		return nil
	}}
	gone := func(rep catalogs.ReclaimReport, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		after := tableFiles(t, dir)
		var deleted []string
		for _, f := range before {
			if !slices.Contains(after, f) {
				deleted = append(deleted, f)
			}
		}
		slices.Sort(want)
		if !slices.Equal(deleted, want) {
			t.Fatalf("deleted %v\nwant    %v", deleted, want)
		}
		if rep.Files() != len(want) {
			t.Fatalf("report counts %d files, want %d: %+v", rep.Files(), len(want), rep)
		}
		before = after
	}
	dry, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour, DryRun: true, Held: opts.Held})
	if err != nil || !slices.Equal(tableFiles(t, dir), before) {
		t.Fatalf("dry run: %v, or it deleted files", err)
	}
	if len(dry.Orphans) != 3 {
		t.Fatalf("dry run orphans %v, want the staged file, the stray DV, the temporary file", dry.Orphans)
	}
	rep, err := p.Reclaim(ctx, opts)
	gone(rep, err, append(addPaths(t, orphan), "deletion_vector_"+strayDV.String()+".bin", "_delta_log/.00000000000000000004.json.0123.tmp")...)
	if rep.Young != 2 {
		t.Fatalf("young %d, want 2 (the young %v, the held %v)", rep.Young, addPaths(t, young), addPaths(t, held))
	}
	// Eight days on, the overwrite's tombstone has expired: the file it
	// removed goes, the live file (and its DV) stays. The remove of
	// version 3 names the live file's older (path, DV) pair: its path is
	// still live, so it stays too.
	delta.SetNow(p, func() time.Time { return time.Now().Add(8 * 24 * time.Hour) })
	rep, err = p.Reclaim(ctx, opts)
	gone(rep, err, addPaths(t, first)...)
}

// TestVacuumProtocolCheck: a table whose protocol holds a feature this
// implementation does not know is not vacuumed (vacuumProtocolCheck
// asks VACUUM to check reader and writer features first): the table is
// counted failed, its orphan stays, and the error names the feature.
func TestVacuumProtocolCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		proto dcodec.Protocol
	}{
		{"writer feature", dcodec.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{dcodec.FeatureVacuumProtocolCheck, "futureWriterFeature"}}},
		{"reader feature", dcodec.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{dcodec.FeatureVacuumProtocolCheck, "futureWriterFeature"}, WriterFeatures: []string{dcodec.FeatureVacuumProtocolCheck, "futureWriterFeature"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := t.TempDir()
			p := openLocal(t, wh)
			ctx := context.Background()
			id := ident("default", "pc")
			dir := filepath.Join(wh, "default", "pc")
			if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
				t.Fatal(err)
			}
			b := catalogtest.Batch(0, 2)
			defer b.Release()
			if _, err := p.WriteBatch(ctx, id, b); err != nil {
				t.Fatal(err)
			}
			pr := tc.proto
			enc, err := dcodec.EncodeCommit([]dcodec.Action{{Protocol: &pr}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "_delta_log", dcodec.CommitName(1)), enc, 0o644); err != nil {
				t.Fatal(err)
			}
			ageAll(t, dir, 2*time.Hour)
			before := tableFiles(t, dir)
			rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour})
			if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "futureWriterFeature") || rep.TablesFailed != 1 {
				t.Fatalf("reclaim: %+v, %v; want the table failed, FailedPrecondition naming the feature", rep, err)
			}
			if after := tableFiles(t, dir); !slices.Equal(after, before) {
				t.Fatalf("files %v, want %v kept", after, before)
			}
		})
	}
}

// TestVacuumLog: metadata cleanup expires the commits below the newest
// checkpoint not newer than the cutoff commit (delta.logRetentionDuration,
// 30 days): with every commit older than that, versions 0-9 go and the
// checkpoint of version 10, its commit and the ones after it stay, and
// the table still reads (through delta-rs too, when it is here); without a checkpoint nothing in the log goes;
// with young commits nothing goes either.
func TestVacuumLog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commits int64
		age     time.Duration
		expired int64 // versions [0, expired) go
	}{
		{"old, with a checkpoint", 12, 40 * 24 * time.Hour, 10},
		{"old, no checkpoint", 9, 40 * 24 * time.Hour, 0},
		{"a checkpoint, commits younger than the retention", 12, 20 * 24 * time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh := t.TempDir()
			p := openLocal(t, wh)
			ctx := context.Background()
			id := ident("default", "lg")
			dir := filepath.Join(wh, "default", "lg")
			if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
				t.Fatal(err)
			}
			for v := int64(1); v <= tc.commits; v++ {
				commitRows(t, p, id, v*10, 1, false)
			}
			if err := p.Close(); err != nil { // the rounds' checkpoints
				t.Fatal(err)
			}
			ageAll(t, dir, tc.age)
			before := tableFiles(t, dir)
			rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for v := int64(0); v < tc.expired; v++ {
				want = append(want, "_delta_log/"+dcodec.CommitName(v))
			}
			var deleted []string
			after := tableFiles(t, dir)
			for _, f := range before {
				if !slices.Contains(after, f) {
					deleted = append(deleted, f)
				}
			}
			if !slices.Equal(deleted, want) || rep.MetadataFiles != len(want) || rep.DataFiles != 0 {
				t.Fatalf("deleted %v (%+v)\nwant    %v", deleted, rep, want)
			}
			if _, n, err := scanAll(t, p, id); err != nil || n != tc.commits {
				t.Fatalf("scan after the cleanup: %d rows, %v; want %d", n, err, tc.commits)
			}
			if py := deltaPython(t); py != "" {
				if dr := readDeltalake(t, py, dir); dr.Version != tc.commits || int64(len(dr.Rows)) != tc.commits {
					t.Fatalf("deltalake after the cleanup: version %d, %d rows; want %d", dr.Version, len(dr.Rows), tc.commits)
				}
			}
		})
	}
}

// TestVacuumRecheck: a commit that lands between the listing and the
// deletion (its file old enough to look orphaned) keeps its file: the
// log is read again before anything is deleted.
func TestVacuumRecheck(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "rc")
	dir := filepath.Join(wh, "default", "rc")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 2)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	ageAll(t, dir, 2*time.Hour)
	defer delta.SetReclaimBeforeRecheck(func(catalogs.TableIdent) {
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
			t.Error(err)
		}
	})()
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour})
	if err != nil || rep.Files() != 0 {
		t.Fatalf("reclaim: %+v, %v; want nothing deleted", rep, err)
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 2 {
		t.Fatalf("scan: %d rows, %v; want 2", n, err)
	}
}

// TestVacuumSidecars: metadata cleanup on a V2-checkpoint table (Spark's,
// with the gateway's UUID-named checkpoint at 8 after two appends), every
// file 40 days old: the commits, checksums and Spark's checkpoint below 8
// go, and so do the sidecar of Spark's checkpoint (no kept checkpoint
// references it any more) and an old orphan sidecar; the gateway's
// checkpoint's sidecar and an orphan younger than a day (a checkpoint
// under way) stay; the table reads every row after, and delta-rs too.
func TestVacuumSidecars(t *testing.T) {
	const name = "v2checkpoint_parquet"
	ctx := context.Background()
	wh := t.TempDir()
	dir := filepath.Join(wh, "spark", name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(sparkFixtures, name))); err != nil {
		t.Fatal(err)
	}
	scDir := filepath.Join(dir, "_delta_log", dcodec.SidecarDir)
	sparks, err := os.ReadDir(scDir)
	if err != nil || len(sparks) != 1 {
		t.Fatalf("the fixture's sidecars: %v, %v; want Spark's one", sparks, err)
	}
	p := openLocal(t, wh)
	id := ident("spark", name)
	bs, rows, err := scanAll(t, p, id)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var rs []catalogs.WriteReceipt
		for _, b := range bs {
			r, err := p.WriteBatch(ctx, id, b)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		if _, err := p.Commit(ctx, id, rs); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil { // the checkpoint at 8
		t.Fatal(err)
	}
	for _, n := range []string{"0b5e2f7a-1c3d-4e5f-8a9b-7c6d5e4f3a21.parquet", "young.parquet"} {
		if err := os.WriteFile(filepath.Join(scDir, n), []byte("orphan"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ageAll(t, dir, 40*24*time.Hour)
	if err := os.Chtimes(filepath.Join(scDir, "young.parquet"), time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	before := tableFiles(t, dir)
	var want []string
	for _, f := range before {
		n, ok := strings.CutPrefix(f, "_delta_log/")
		if !ok {
			continue
		}
		if v, err := strconv.ParseInt(strings.SplitN(n, ".", 2)[0], 10, 64); err == nil && v < 8 {
			want = append(want, f) // commits, checksums and the checkpoint below 8
		}
	}
	want = append(want, "_delta_log/_sidecars/"+sparks[0].Name(), "_delta_log/_sidecars/0b5e2f7a-1c3d-4e5f-8a9b-7c6d5e4f3a21.parquet")
	slices.Sort(want)
	if _, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	after := tableFiles(t, dir)
	var deleted []string
	for _, f := range before {
		if !slices.Contains(after, f) && strings.HasPrefix(f, "_delta_log/") {
			deleted = append(deleted, f)
		}
	}
	if !slices.Equal(deleted, want) {
		t.Fatalf("deleted from _delta_log %v\nwant %v", deleted, want)
	}
	var kept int
	for _, f := range after {
		if strings.HasPrefix(f, "_delta_log/_sidecars/") {
			kept++
		}
	}
	if kept != 2 {
		t.Fatalf("sidecars left %v, want the gateway's checkpoint's and the young orphan", after)
	}
	if _, n, err := scanAll(t, openLocal(t, wh), id); err != nil || n != 3*rows {
		t.Fatalf("scan after the cleanup: %d rows, %v; want %d", n, err, 3*rows)
	}
	if py := deltaPython(t); py != "" {
		dr := sparkReader{name: "deltalake", argv: []string{py, "../../integration/delta/read_table.py"}}.read(t, dir)[0]
		if dr.Version != 8 || int64(len(dr.Rows)) != 3*rows {
			t.Fatalf("deltalake after the cleanup: version %d, %d rows; want 8, %d", dr.Version, len(dr.Rows), 3*rows)
		}
	}
}
