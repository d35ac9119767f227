package paimon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// tableFiles lists the files under dir, relative to it.
func tableFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// backdate sets the modification time of every file under dir age ago.
func backdate(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	old := time.Now().Add(-age)
	for _, f := range tableFiles(t, dir) {
		if err := os.Chtimes(filepath.Join(dir, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func stage(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, from, n int64) []catalogs.WriteReceipt {
	t.Helper()
	b := sampleBatch(rowsFrom(from, n, 9))
	defer b.Release()
	r, err := p.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatal(err)
	}
	return []catalogs.WriteReceipt{r}
}

// TestReclaim: the reclaimer deletes the staged data files of a write
// that never committed, the manifests and manifest list of a commit that
// never landed and the temporary file of an interrupted atomic write, all
// older than the min age; it keeps every file a snapshot or a tag reaches
// (a file only a tag holds, its snapshots expired and the manifests
// compacted, as Paimon Java leaves it), the files a live unit of work
// holds, young files and files it does not know. A dry run deletes
// nothing. Afterwards the candidate files are exactly the reachable, held
// and young ones, and the table reads as before.
func TestReclaim(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"partition": "p"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "default.db", "t")
	rs1 := stage(t, p, id, 0, 10)
	if _, err := p.CommitOnce(ctx, id, "c1", rs1); err != nil {
		t.Fatal(err)
	}
	snap1, err := os.ReadFile(filepath.Join(dir, "snapshot", "snapshot-1"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "tag", "tag-before"), snap1)
	for i, cid := range []string{"c2", "c3"} {
		if _, err := p.CommitOverwrite(ctx, id, cid, stage(t, p, id, int64(100*(i+1)), 5)); err != nil {
			t.Fatal(err)
		}
	}
	// Expire snapshots 1 and 2 and compact snapshot 3's manifests.
	for _, n := range []string{"snapshot-1", "snapshot-2"} {
		if err := os.Remove(filepath.Join(dir, "snapshot", n)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "snapshot", "EARLIEST"), []byte("3"))
	p3 := filepath.Join(dir, "snapshot", "snapshot-3")
	raw, err := os.ReadFile(p3)
	if err != nil {
		t.Fatal(err)
	}
	var s3 map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&s3); err != nil {
		t.Fatal(err)
	}
	s3["baseManifestList"] = s3["deltaManifestList"]
	delete(s3, "baseManifestListSize")
	if raw, err = json.Marshal(s3); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p3, raw)
	want := scanRendered(t, p, id)

	// Leftovers: a staged write, a commit that lost its snapshot, the
	// temporary files of interrupted writes; and files that are not
	// candidates.
	staged := paimon.ReceiptFiles(id, stage(t, p, id, 1000, 20))
	reach, err := paimon.Reachable(ctx, p, id)
	if err != nil {
		t.Fatal(err)
	}
	var manifest string
	for _, f := range reach {
		if strings.HasPrefix(f, "manifest/manifest-") && !strings.HasPrefix(f, "manifest/manifest-list-") {
			manifest = f
		}
	}
	mb, err := os.ReadFile(filepath.Join(dir, manifest))
	if err != nil {
		t.Fatal(err)
	}
	lost := []string{"manifest/manifest-0badc0de-0000-4000-8000-000000000000-0", "manifest/manifest-list-0badc0de-0000-4000-8000-000000000000-1",
		"snapshot/.snapshot-4.0123456789abcdef.tmp", "manifest/.manifest-x-0.0123456789abcdef.tmp"}
	for _, f := range lost {
		writeFile(t, filepath.Join(dir, f), mb)
	}
	foreign := []string{"p=p0/bucket-0/README", "manifest/index-manifest-x-0", "statistics/stat-x", "index/index-x-0",
		"p=p0/data-not-in-a-bucket.parquet", "snapshot/.junk", "p=p0/bucket-0/.data-x.parquet"}
	for _, f := range foreign {
		writeFile(t, filepath.Join(dir, f), []byte("x"))
	}
	heldRS := stage(t, p, id, 2000, 5)
	held := paimon.ReceiptFiles(id, heldRS)
	backdate(t, dir, 2*time.Hour)
	young := paimon.ReceiptFiles(id, stage(t, p, id, 3000, 5))
	before := tableFiles(t, dir)

	opts := catalogs.ReclaimOptions{MinAge: time.Hour, Held: func(_ context.Context, tb catalogs.TableIdent) []catalogs.WriteReceipt {
		if tb.String() == id.String() {
			return heldRS
		}
		return nil
	}}
	dry := opts
	dry.DryRun = true
	rep, err := p.Reclaim(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	if got := tableFiles(t, dir); !slices.Equal(got, before) {
		t.Fatalf("a dry run deleted files: %v", diff(before, got))
	}
	wantOrphans := len(staged) + len(lost)
	if len(rep.Orphans) < wantOrphans {
		t.Fatalf("dry run found %v, want at least the %d leftovers", rep.Orphans, wantOrphans)
	}

	rep, err = p.Reclaim(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report %+v", rep)
	after := tableFiles(t, dir)
	for _, f := range slices.Concat(staged, lost) {
		if slices.Contains(after, f) {
			t.Errorf("leftover %s not reclaimed", f)
		}
	}
	for _, f := range slices.Concat(reach, held, young, foreign) {
		if !slices.Contains(after, f) {
			t.Errorf("%s deleted: it is reachable, held, young or not a candidate", f)
		}
	}
	if rep.Tables != 1 || rep.TablesFailed != 0 || rep.DataFiles != len(staged) || rep.ManifestFiles < 2 || rep.MetadataFiles != 2 ||
		rep.Young != len(young)+len(held) || rep.Files() != len(before)-len(after) {
		t.Errorf("report %+v: want %d data files, 2 temporary files, %d young, %d deleted", rep, len(staged), len(young)+len(held), len(before)-len(after))
	}
	keep := slices.Concat(reach, held, young, foreign)
	for _, f := range after {
		if !slices.Contains(keep, f) && (strings.HasPrefix(f, "manifest/manifest-") || strings.Contains(f, "/bucket-")) {
			t.Errorf("unreferenced file left: %s", f)
		}
	}
	if got := scanRendered(t, p, id); !slices.Equal(got, want) {
		t.Errorf("rows after reclaim\n%v\nwant\n%v", got, want)
	}
	// Nothing more to do the second time.
	if rep, err := p.Reclaim(ctx, opts); err != nil || rep.Files() != 0 {
		t.Errorf("second reclaim: %+v, %v", rep, err)
	}
	if _, err := p.Reclaim(ctx, catalogs.ReclaimOptions{}); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("min age 0: %v, want InvalidArgument", err)
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, "-"+x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, "+"+x)
		}
	}
	return out
}

// TestReclaimRecheck: a commit that lands between the reclaimer's
// listing and its deletions (its files old: a Java writer's, committed
// late) keeps its files: the snapshots are read again before deleting.
func TestReclaimRecheck(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "default.db", "t")
	rs := stage(t, p, id, 0, 10)
	backdate(t, dir, 2*time.Hour)
	defer paimon.SetReclaimBeforeRecheck(func(catalogs.TableIdent) {
		if _, err := p.Commit(ctx, id, rs); err != nil {
			t.Error(err)
		}
	})()
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	files := tableFiles(t, dir)
	for _, f := range paimon.ReceiptFiles(id, rs) {
		if !slices.Contains(files, f) {
			t.Errorf("the file %s of the commit that landed meanwhile was deleted (report %+v)", f, rep)
		}
	}
	if got := scanRendered(t, p, id); len(got) != 10 {
		t.Errorf("rows: %v", got)
	}
}

// TestReclaimBranches: a table with branches is skipped and reported, its
// files untouched: the branches' snapshots are not read.
func TestReclaimBranches(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "default.db", "t")
	stage(t, p, id, 0, 10)
	writeFile(t, filepath.Join(dir, "branch", "branch-b1", "schema", "schema-0"), []byte("{}"))
	backdate(t, dir, 2*time.Hour)
	before := tableFiles(t, dir)
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour})
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "branch") || rep.TablesFailed != 1 {
		t.Fatalf("reclaim of a table with branches: %+v, %v", rep, err)
	}
	if got := tableFiles(t, dir); !slices.Equal(got, before) {
		t.Errorf("files deleted: %v", diff(before, got))
	}
}

// TestReclaimS3: on S3 the reclaimer lists the table's objects with their
// age, deletes an orphan staged file and leaves the committed files and
// the objects of a sibling table's prefix ("t" and "tt") alone.
func TestReclaimS3(t *testing.T) {
	ctx := context.Background()
	s3 := newFakeS3(t)
	p, prefix := s3.open(t, nil)
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, stage(t, p, id, 0, 10)); err != nil {
		t.Fatal(err)
	}
	committed, err := s3.list(prefix)
	if err != nil {
		t.Fatal(err)
	}
	staged := paimon.ReceiptFiles(id, stage(t, p, id, 100, 10))
	sibling := "default.db/tt/bucket-0/data-x-0.parquet"
	if _, err := s3.backend.PutObject(bucket, prefix+sibling, nil, strings.NewReader("x"), 1, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s3.list(prefix)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(append(committed, sibling)))
	slices.Sort(after)
	if rep.DataFiles != len(staged) || !slices.Equal(after, want) {
		t.Fatalf("report %+v; objects left\n%v\nwant\n%v", rep, after, want)
	}
	if got := scanRendered(t, p, id); len(got) != 10 {
		t.Errorf("rows after reclaim: %v", got)
	}
}
