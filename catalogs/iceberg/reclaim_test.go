package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
)

// filesUnder lists the regular files under dir (none when it is missing).
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// backdate sets the modification time of every file under dir to age ago.
func backdate(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	old := time.Now().Add(-age)
	for _, f := range filesUnder(t, dir) {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// localTableDir is the local directory of a table.
func localTableDir(t *testing.T, p *Provider, id catalogs.TableIdent) string {
	t.Helper()
	tbl, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	dir, ok := localPath(tbl.Location())
	if !ok {
		t.Fatalf("location %s is not local", tbl.Location())
	}
	return dir
}

// unreferencedFiles returns the files of the table's data/ and metadata/
// directories that its metadata does not reach, computed with iceberg-go
// alone: the current metadata file and its log, and for every snapshot its
// manifest list, manifests and their entries' files.
func unreferencedFiles(t *testing.T, p *Provider, id catalogs.TableIdent) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := p.cat.LoadTable(ctx, []string{id.Namespace[0], id.Name})
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]bool{}
	add := func(s string) { ref[strings.TrimPrefix(s, "file://")] = true }
	add(tbl.MetadataLocation())
	for e := range tbl.Metadata().PreviousFiles() {
		add(e.MetadataFile)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		add(s.ManifestList)
		mfs, err := s.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			add(mf.FilePath())
			entries, err := mf.FetchEntries(fsys, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				add(e.DataFile().FilePath())
			}
		}
	}
	dir := strings.TrimPrefix(tbl.Location(), "file://")
	var out []string
	for _, f := range append(filesUnder(t, dir+"/data"), filesUnder(t, dir+"/metadata")...) {
		if !ref[f] {
			out = append(out, f)
		}
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func stagedPath(t *testing.T, r catalogs.WriteReceipt) string {
	t.Helper()
	var rm receiptMeta
	if err := json.Unmarshal(r.Metadata, &rm); err != nil || len(rm.Files) != 1 {
		t.Fatalf("receipt %s: %v", r.Metadata, err)
	}
	p, _ := localPath(rm.Files[0].Path)
	return p
}

func rowsAt(t *testing.T, p *Provider, id catalogs.TableIdent, snapshot *int64) int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := p.cat.LoadTable(ctx, []string{id.Namespace[0], id.Name})
	if err != nil {
		t.Fatal(err)
	}
	var opts []table.ScanOption
	if snapshot != nil {
		opts = append(opts, table.WithSnapshotID(*snapshot))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan (snapshot %v): %v", snapshot, err)
	}
	defer at.Release()
	return at.NumRows()
}

// TestReclaim: the orphans of each kind (a staged data file, the
// metadata.json, manifest list and manifest of a commit that never
// landed) are deleted; the files of an old snapshot are kept (the table
// still reads at it), young orphans are kept, and nothing outside the
// table's location, no symlink and no file of another kind is touched. A
// dry run reports exactly what the real run then deletes.
func TestReclaim(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t) // snapshot 1: 20 rows in two files
	dir := localTableDir(t, p, id)
	wh := filepath.Dir(filepath.Dir(dir))
	first, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	snap1 := first.CurrentSnapshot().SnapshotID
	b := idBatch(100, 5)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOverwrite(ctx, id, "", []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err) // snapshot 2: the 5 rows replace the 20
	}
	cur, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	// Orphans: a staged file nobody commits, and what a lost commit wrote.
	b = idBatch(200, 5)
	lost, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	staged := stagedPath(t, lost)
	meta := dir + "/metadata"
	list, _ := localPath(cur.CurrentSnapshot().ManifestList)
	mfs, err := cur.CurrentSnapshot().Manifests(mustIO(t, cur))
	if err != nil || len(mfs) == 0 {
		t.Fatal(mfs, err)
	}
	manifest, _ := localPath(mfs[0].FilePath())
	orphans := []string{
		staged,
		meta + fmt.Sprintf("/00042-%s.metadata.json", uuid.New()),
		meta + fmt.Sprintf("/snap-42-1-%s.avro", uuid.New()),
		meta + fmt.Sprintf("/%s-m0.avro", uuid.New()),
	}
	curMeta, _ := localPath(cur.MetadataLocation())
	copyFile(t, curMeta, orphans[1])
	copyFile(t, list, orphans[2])
	copyFile(t, manifest, orphans[3])

	// Never to be touched: outside the table, symlinks, other kinds.
	outside := []string{wh + "/outside.parquet", wh + "/default.db/notatable/data/x.parquet", meta + "/version-hint.text", dir + "/data/notes.txt"}
	for _, f := range outside {
		copyFile(t, staged, f)
	}
	if err := os.Symlink(wh+"/outside.parquet", dir+"/data/link.parquet"); err != nil {
		t.Fatal(err)
	}
	backdate(t, wh, 2*time.Hour)
	b = idBatch(300, 5)
	young, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	youngPath := stagedPath(t, young)
	before := filesUnder(t, wh)

	opts := catalogs.ReclaimOptions{MinAge: time.Hour, DryRun: true}
	rep, err := p.Reclaim(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range rep.Orphans {
		c, _ := localPath(o)
		got = append(got, c)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(orphans))
	if !slices.Equal(got, want) {
		t.Fatalf("dry run found\n%v\nwant\n%v", got, want)
	}
	if rep.Tables != 1 || rep.DataFiles != 1 || rep.ManifestFiles != 2 || rep.MetadataFiles != 1 || rep.Young != 1 || rep.Bytes <= 0 {
		t.Errorf("dry run report %+v", rep)
	}
	if after := filesUnder(t, wh); !slices.Equal(after, before) {
		t.Fatalf("a dry run deleted files: %v", diff(before, after))
	}

	opts.DryRun = false
	rep, err = p.Reclaim(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files() != 4 || len(rep.Orphans) != 0 {
		t.Errorf("report %+v, want 4 files deleted", rep)
	}
	after := filesUnder(t, wh)
	if gone := diff(before, after); !slices.Equal(gone, want) {
		t.Errorf("deleted\n%v\nwant\n%v", gone, want)
	}
	for _, f := range append(outside, youngPath, dir+"/data/link.parquet") {
		if _, err := os.Lstat(f); err != nil {
			t.Errorf("%s was touched: %v", f, err)
		}
	}
	// What is left unreferenced: the young file and the files of other kinds.
	if left, want := unreferencedFiles(t, p, id), slices.Sorted(slices.Values([]string{youngPath, outside[2], outside[3]})); !slices.Equal(left, want) {
		t.Errorf("unreferenced after reclaim: %v, want %v", left, want)
	}
	if n := rowsAt(t, p, id, nil); n != 5 {
		t.Errorf("current rows %d, want 5", n)
	}
	if n := rowsAt(t, p, id, &snap1); n != 20 {
		t.Errorf("rows at the old snapshot %d, want 20 (its files must be kept)", n)
	}
}

func mustIO(t *testing.T, tbl *table.Table) iceio.WriteFileIO {
	t.Helper()
	fsys, err := fileIO(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

// diff returns what is in a and not in b.
func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestReclaimRecheck: a staged file that a commit references between the
// listing and the deletion is kept (the metadata is read again).
func TestReclaimRecheck(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	b := idBatch(100, 5)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	staged := stagedPath(t, r)
	backdate(t, localTableDir(t, p, id), 2*time.Hour)
	p.beforeRecheck = func(catalogs.TableIdent) {
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
			t.Error(err)
		}
	}
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staged); err != nil || rep.DataFiles != 0 {
		t.Fatalf("the file a commit landed meanwhile was deleted (%+v): %v", rep, err)
	}
	if n := rowsAt(t, p, id, nil); n != 25 {
		t.Errorf("rows %d, want 25", n)
	}
}

// TestReclaimHeld: the files of receipts a live unit of work holds are
// kept whatever their age; an invalid min age is refused.
func TestReclaimHeld(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	b := idBatch(100, 5)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	staged := stagedPath(t, r)
	backdate(t, localTableDir(t, p, id), 2*time.Hour)
	held := func(_ context.Context, t catalogs.TableIdent) []catalogs.WriteReceipt {
		if t.Key() == id.Key() {
			return []catalogs.WriteReceipt{r}
		}
		return nil
	}
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour, Held: held})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staged); err != nil || rep.Files() != 0 || rep.Young != 1 {
		t.Fatalf("a held staged file was deleted (%+v): %v", rep, err)
	}
	if _, err := p.Reclaim(ctx, catalogs.ReclaimOptions{}); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("min age 0: %v, want invalid argument", err)
	}
	rep, err = p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour})
	if err != nil || rep.DataFiles != 1 {
		t.Fatalf("once no longer held: %+v, %v", rep, err)
	}
	if _, err := os.Stat(staged); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staged file left: %v", err)
	}
}

// TestReclaimConcurrentCommits: 16 concurrent writers leave lost
// compare-and-swap attempts behind; after the reclaimer runs no file of
// the table is unreferenced, and every commit's rows are there. It makes
// 16 × 2 commits; FLIGHTGW_RECLAIM_COMMITS=50 makes the issue's
// 16 × 50 run (minutes: every commit attempt reads the table's manifests).
func TestReclaimConcurrentCommits(t *testing.T) {
	writers, commits := 16, 2
	if n, err := strconv.Atoi(os.Getenv("FLIGHTGW_RECLAIM_COMMITS")); err == nil && n > 0 {
		writers, commits = 16, n
	}
	ctx := context.Background()
	p, id, _ := planTable(t)
	p.cfg.commit.Retries = 10000
	p.cfg.commit.TotalTimeout = 10 * time.Minute
	p.cfg.commit.MinWait, p.cfg.commit.MaxWait = time.Millisecond, 20*time.Millisecond
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range commits {
				b := idBatch(int64(1000*w+i), 1)
				r, err := p.WriteBatch(ctx, id, b)
				b.Release()
				if err == nil {
					_, err = p.CommitOnce(ctx, id, fmt.Sprintf("w%d-%d", w, i), []catalogs.WriteReceipt{r})
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	before := len(unreferencedFiles(t, p, id))
	time.Sleep(10 * time.Millisecond)
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d×%d commits: %d unreferenced files before; reclaimed %+v", writers, commits, before, rep)
	if left := unreferencedFiles(t, p, id); len(left) != 0 {
		t.Errorf("%d unreferenced files left: %v", len(left), left)
	}
	if n := rowsAt(t, p, id, nil); n != int64(20+writers*commits) {
		t.Errorf("rows %d, want %d", n, 20+writers*commits)
	}
}

// TestCanonPath: locations compare in one spelling, and nothing with a
// ".." segment is accepted.
func TestCanonPath(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"/a/b/c.parquet", "/a/b/c.parquet", true},
		{"file:///a/b/", "/a/b", true},
		{"file://localhost/a/b", "/a/b", true},
		{"file:/a/b", "/a/b", true},
		{"s3://bkt/wh/t/x%20y.parquet", "s3://bkt/wh/t/x%20y.parquet", true},
		{"s3a://bkt/wh//t", "s3://bkt/wh/t", true},
		{"S3://bkt/k", "s3://bkt/k", true},
		{"/a/../etc/passwd", "", false},
		{"s3://bkt/wh/../other", "", false},
		{"file://host/a", "", false},
		{"relative/path", "", false},
		{"", "", false},
	} {
		got, ok := canonPath(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("canonPath(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if within("/a/bc", "/a/b") || !within("/a/b/c", "/a/b") || within("/a/b", "/a/b") || !within("s3://b/t/d/x", "s3://b/t/") {
		t.Error("within")
	}
}
