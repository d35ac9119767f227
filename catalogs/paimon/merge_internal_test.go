package paimon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// mergeCatalog opens a fresh local warehouse whose new tables get the
// given table options (as the catalog's table-default.*: a client does
// not set manifest options).
func mergeCatalog(t testing.TB, opts map[string]string) *Provider {
	t.Helper()
	props := map[string]string{PropWarehouse: t.TempDir(), PropCreateNamespaces: "default",
		lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20", lake.PropCommitRetries: "1000"}
	for k, v := range opts {
		props[PropTableDefaultPrefix+k] = v
	}
	p, err := Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mergeTable creates table "m" with the given table options.
func mergeTable(t testing.TB, opts map[string]string) (*Provider, catalogs.TableIdent) {
	t.Helper()
	p := mergeCatalog(t, opts)
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "m"}
	if _, err := p.CreateTable(context.Background(), id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	return p, id
}

// commitRows writes rows [from, from+n) and commits them (overwriting
// the table when overwrite is set).
func commitRows(t testing.TB, p *Provider, id catalogs.TableIdent, from, n int64, overwrite bool) {
	t.Helper()
	ctx := context.Background()
	b := catalogtest.Batch(from, n)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if overwrite {
		_, err = p.CommitOverwrite(ctx, id, "", []catalogs.WriteReceipt{r})
	} else {
		_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{r})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// manifests are the manifest list entries of the latest snapshot, base
// then delta.
func manifests(t testing.TB, p *Provider, id catalogs.TableIdent) (base, delta []manifestMeta) {
	t.Helper()
	ctx := context.Background()
	st, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if base, err = p.readManifestList(ctx, id, st.dir, st.snap.BaseManifestList); err != nil {
		t.Fatal(err)
	}
	if delta, err = p.readManifestList(ctx, id, st.dir, st.snap.DeltaManifestList); err != nil {
		t.Fatal(err)
	}
	return base, delta
}

// scanIDs reads the table's ids with Scan and checks each is there once.
func scanIDs(t testing.TB, p *Provider, id catalogs.TableIdent) []int64 {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{Columns: []string{"id"}})
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

func idRange(from, n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i)
	}
	return out
}

// TestManifestCompactionBounded: after each of 100 commits the snapshot
// names a bounded number of manifests (with Paimon's defaults, at most
// merge-min-count small ones before they merge), the merged manifests
// roll at manifest.target-file-size, and the table holds every row once.
// Without compaction the 100th snapshot names 100 manifests.
func TestManifestCompactionBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  map[string]string
		bound int // manifests in base + delta
	}{
		{"defaults", nil, defaultManifestMergeMinCount + 1},
		{"min-count 4", map[string]string{optManifestMergeMinCount: "4"}, 4 + 1},
		// Merged manifests of about 3 KiB: runs that reach it merge, so
		// the count grows with the entries, not with the commits.
		{"target 3kb", map[string]string{optManifestMergeMinCount: "4", optManifestTargetSize: "3 kb"}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, id := mergeTable(t, tc.opts)
			const commits, rows = 100, 3
			most, rolled := 0, 0
			for c := range int64(commits) {
				commitRows(t, p, id, c*rows, rows, false)
				base, delta := manifests(t, p, id)
				most = max(most, len(base)+len(delta))
				if len(base)+len(delta) > tc.bound {
					t.Fatalf("after commit %d: %d base + %d delta manifests, want at most %d", c+1, len(base), len(delta), tc.bound)
				}
				if len(delta) != 1 || delta[0].NumAdded != 1 || delta[0].NumDeleted != 0 {
					t.Fatalf("after commit %d: delta %+v, want this commit's one file", c+1, delta)
				}
				for _, m := range base {
					if m.NumAdded > 1 {
						rolled++
					}
				}
			}
			if rolled == 0 {
				t.Error("no merged manifest in any base list")
			}
			if got, want := scanIDs(t, p, id), idRange(0, commits*rows); !slices.Equal(got, want) {
				t.Errorf("rows after %d commits: %d, want %d", commits, len(got), len(want))
			}
			t.Logf("at most %d manifests per snapshot", most)
		})
	}
}

// TestManifestRolling: a merge into a small target size writes several
// manifests, each near the target, whose entries are every live file; a
// target smaller than any manifest gives one entry a file.
func TestManifestRolling(t *testing.T) {
	p, id := mergeTable(t, map[string]string{optManifestMergeMinCount: "40", optManifestTargetSize: "4 kb"})
	for c := range int64(40) {
		commitRows(t, p, id, c, 1, false)
	}
	base, _ := manifests(t, p, id)
	var files int64
	for _, m := range base {
		files += m.NumAdded
		if m.NumAdded > 1 && m.FileSize > 3*4<<10 {
			t.Errorf("merged manifest %s is %d bytes for a 4 KiB target", m.FileName, m.FileSize)
		}
	}
	if len(base) < 2 || files != 39 {
		t.Errorf("base list of %d manifests with %d files, want several holding the 39 earlier files", len(base), files)
	}
	if got := scanIDs(t, p, id); !slices.Equal(got, idRange(0, 40)) {
		t.Errorf("rows %v", got)
	}

	// A target below the header's size still writes an entry a file.
	st, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	w := &manifestWriter{p: p, st: st, prefix: "tiny", target: 1}
	metas, err := w.write(context.Background(), mustLive(t, p, id)[:5])
	if err != nil || len(metas) != 5 || len(w.written) != 5 {
		t.Errorf("target 1: %d manifests (%v), want 5", len(metas), err)
	}
}

// TestManifestFullCompaction: after an overwrite, the next commit's full
// compaction drops the DELETE entries and the ADD entries they cancel,
// so no manifest of the snapshot names an overwritten file; a minor
// compaction cancels them within the files it merges.
func TestManifestFullCompaction(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts map[string]string
	}{
		{"full", map[string]string{optManifestFullThreshold: "1b"}},
		{"minor", map[string]string{optManifestMergeMinCount: "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, id := mergeTable(t, tc.opts)
			for c := range int64(3) {
				commitRows(t, p, id, c*10, 10, false)
			}
			old := map[string]bool{}
			for _, e := range mustLive(t, p, id) {
				old[e.file.FileName] = true
			}
			commitRows(t, p, id, 100, 5, true)
			_, delta := manifests(t, p, id)
			if len(delta) != 1 || delta[0].NumDeleted != 3 || delta[0].NumAdded != 1 {
				t.Fatalf("overwrite delta %+v, want 3 deletes and 1 add", delta)
			}
			commitRows(t, p, id, 200, 5, false)
			commitRows(t, p, id, 300, 5, false)
			base, delta := manifests(t, p, id)
			st, _ := p.load(context.Background(), id)
			var adds int64
			for _, m := range append(base, delta...) {
				if m.NumDeleted != 0 {
					t.Errorf("manifest %s still has %d DELETE entries", m.FileName, m.NumDeleted)
				}
				adds += m.NumAdded
				es, err := p.readManifest(context.Background(), id, st.dir, m.FileName)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					if old[e.file.FileName] {
						t.Errorf("manifest %s names overwritten file %s (kind %d)", m.FileName, e.file.FileName, e.kind)
					}
				}
			}
			if adds != 3 {
				t.Errorf("%d ADD entries, want the 3 live files", adds)
			}
			want := append(append(idRange(100, 5), idRange(200, 5)...), idRange(300, 5)...)
			if got := scanIDs(t, p, id); !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v", got, want)
			}
			if st.snap.TotalRecordCount != 15 {
				t.Errorf("totalRecordCount %d, want 15", st.snap.TotalRecordCount)
			}
		})
	}
}

func mustLive(t testing.TB, p *Provider, id catalogs.TableIdent) []entry {
	t.Helper()
	st, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	live, err := p.liveFiles(context.Background(), id, st.dir, st.snap)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// TestManifestCompactionRaces: committers racing with compaction on
// every few commits land every commit once, without gaps, and leave no
// manifest that no snapshot names (a lost attempt deletes what it
// merged).
func TestManifestCompactionRaces(t *testing.T) {
	p, id := mergeTable(t, map[string]string{optManifestMergeMinCount: "3"})
	const writers, commits = 4, 12
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for c := range commits {
				b := catalogtest.Batch(int64(w*1000+c*10), 2)
				r, err := p.WriteBatch(context.Background(), id, b)
				b.Release()
				if err == nil {
					_, err = p.CommitOnce(context.Background(), id, fmt.Sprintf("w%d-%d", w, c), []catalogs.WriteReceipt{r})
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.snap.ID != writers*commits {
		t.Fatalf("latest snapshot %d, want %d", st.snap.ID, writers*commits)
	}
	named := map[string]bool{}
	for s := int64(1); s <= st.snap.ID; s++ {
		snap, err := p.readSnapshot(ctx, id, st.dir, s)
		if err != nil {
			t.Fatalf("snapshot %d: %v", s, err)
		}
		for _, l := range []string{snap.BaseManifestList, snap.DeltaManifestList} {
			named[l] = true
			ms, err := p.readManifestList(ctx, id, st.dir, l)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				named[m.FileName] = true
			}
		}
	}
	names, err := p.fs.List(ctx, st.dir+"/manifest")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !named[n] {
			t.Errorf("manifest/%s is named by no snapshot", n)
		}
	}
	if got := scanIDs(t, p, id); len(got) != writers*commits*2 {
		t.Errorf("%d rows, want %d", len(got), writers*commits*2)
	}
}

// TestManifestOptions: the options parse as Paimon's MemorySize and
// integers do; a bad one (a catalog's table default) is refused at
// create, naming it.
func TestManifestOptions(t *testing.T) {
	for in, want := range map[string]int64{"8388608": 8 << 20, "8 mb": 8 << 20, "8MB": 8 << 20, "16m": 16 << 20,
		"1b": 1, "64 kb": 64 << 10, "2 gibibytes": 2 << 30, " 3k ": 3 << 10, "1tb": 1 << 40} {
		if got, err := parseMemorySize(in); err != nil || got != want {
			t.Errorf("parseMemorySize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mb", "-1", "1.5mb", "8 parsecs", "99999999999 tb"} {
		if _, err := parseMemorySize(in); err == nil {
			t.Errorf("parseMemorySize(%q) accepted", in)
		}
	}
	for k, v := range map[string]string{optManifestTargetSize: "0", optManifestFullThreshold: "lots", optManifestMergeMinCount: "0"} {
		p := mergeCatalog(t, map[string]string{k: v})
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "bad"}
		_, err := p.CreateTable(context.Background(), id, catalogtest.Schema, nil)
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), k) {
			t.Errorf("option %s=%q: %v, want InvalidArgument naming it", k, v, err)
		}
	}
}
