package iceberg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// newTable creates a table of catalogtest.Schema in the provider's
// namespace "default".
func newTable(t *testing.T, p *iceberg.Provider, name string) catalogs.TableIdent {
	t.Helper()
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: name}
	if _, err := p.CreateTable(context.Background(), id, catalogtest.Schema, nil); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return id
}

// stage writes rows [from, from+n) and returns the receipt.
func stage(t testing.TB, p *iceberg.Provider, id catalogs.TableIdent, from, n int64) catalogs.WriteReceipt {
	t.Helper()
	b := catalogtest.Batch(from, n)
	defer b.Release()
	r, err := p.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	return r
}

// lakeState is what a table's metadata directory holds, read from disk.
type lakeState struct {
	meta      table.Metadata
	dataFiles []string // of the current snapshot
}

// checkNoOrphans reads the table's metadata directory under wh and fails
// the test for any metadata, manifest list or manifest file that the
// final metadata does not reach: metadata files must be one per version
// (a lost compare-and-swap leaves a second file of a version), every
// manifest list must be a snapshot's, every manifest in one of them.
func checkNoOrphans(t *testing.T, wh string, id catalogs.TableIdent) lakeState {
	t.Helper()
	dir := filepath.Join(wh, "default", id.Name, "metadata")
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Join(wh, "default.db", id.Name, "metadata")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[int][]string{}
	avro := map[string]bool{}
	maxV := -1
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".metadata.json"):
			v, err := strconv.Atoi(strings.SplitN(name, "-", 2)[0])
			if err != nil {
				t.Fatalf("metadata file %s: no version", name)
			}
			versions[v] = append(versions[v], name)
			maxV = max(maxV, v)
		case strings.HasSuffix(name, ".avro"):
			avro[filepath.Join(dir, name)] = true
		}
	}
	for v := 0; v <= maxV; v++ {
		if len(versions[v]) != 1 {
			t.Errorf("metadata version %d: files %v, want exactly one", v, versions[v])
		}
	}
	if len(versions[maxV]) == 0 {
		t.Fatal("no metadata file")
	}
	b, err := os.ReadFile(filepath.Join(dir, versions[maxV][0]))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	local := func(p string) string { return strings.TrimPrefix(p, "file://") }
	reached := map[string]bool{}
	fsys := iceio.LocalFS{}
	for _, s := range meta.Snapshots() {
		reached[local(s.ManifestList)] = true
		mfs, err := s.Manifests(fsys)
		if err != nil {
			t.Fatalf("snapshot %d: %v", s.SnapshotID, err)
		}
		for _, m := range mfs {
			reached[local(m.FilePath())] = true
		}
	}
	for f := range avro {
		if !reached[f] {
			t.Errorf("orphan %s: no snapshot reaches it", filepath.Base(f))
		}
	}
	st := lakeState{meta: meta}
	if cur := meta.CurrentSnapshot(); cur != nil {
		mfs, err := cur.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mfs {
			es, err := m.FetchEntries(fsys, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				st.dataFiles = append(st.dataFiles, e.DataFile().FilePath())
			}
		}
	}
	return st
}

// recordedIDs reads every commit id the snapshots of meta record, with
// the rows and the snapshot of each, failing on an id recorded twice.
func recordedIDs(t *testing.T, meta table.Metadata) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	add := func(id string, rows, snap int64) {
		if prev, ok := out[id]; ok {
			t.Errorf("commit id %s recorded by snapshots %d and %d", id, prev[1], snap)
		}
		out[id] = [2]int64{rows, snap}
	}
	for _, s := range meta.Snapshots() {
		if s.Summary == nil {
			continue
		}
		props := s.Summary.Properties
		if id, ok := props[iceberg.CommitIDKey]; ok {
			n, _ := strconv.ParseInt(props["added-records"], 10, 64)
			add(id, n, s.SnapshotID)
		}
		if v, ok := props[iceberg.CommitIDsKey]; ok {
			var ids map[string]int64
			if err := json.Unmarshal([]byte(v), &ids); err != nil {
				t.Fatalf("snapshot %d: %s: %v", s.SnapshotID, iceberg.CommitIDsKey, err)
			}
			var sum int64
			for id, n := range ids {
				add(id, n, s.SnapshotID)
				sum += n
			}
			if got := props["added-records"]; got != strconv.FormatInt(sum, 10) {
				t.Errorf("snapshot %d: added-records %s, its commits' rows sum to %d", s.SnapshotID, got, sum)
			}
		}
	}
	return out
}

// checkExactlyOnce fails unless every id in want landed once, with its
// own rows, and the table holds exactly their rows and files. It returns
// the snapshot of each id.
func checkExactlyOnce(t *testing.T, p *iceberg.Provider, id catalogs.TableIdent, st lakeState, want map[string]uint64, files int) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	got := recordedIDs(t, st.meta)
	snaps := map[string]int64{}
	var total uint64
	checked := 0
	for cid, rows := range want {
		g, ok := got[cid]
		if !ok || g[0] != int64(rows) {
			t.Errorf("commit %s: recorded %v (rows, snapshot), want %d rows", cid, g, rows)
		}
		snaps[cid] = g[1]
		total += rows
		if checked < 20 { // FindCommit reads what recordedIDs read: a sample
			checked++
			rec, ok, err := p.FindCommit(ctx, id, cid)
			if err != nil || !ok || rec.RowCount != rows || rec.Outcome.SnapshotID != g[1] {
				t.Errorf("FindCommit(%s) = %+v, %v, %v; want %d rows in snapshot %d", cid, rec, ok, err, rows, g[1])
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d commit ids recorded, want %d", len(got), len(want))
	}
	cur := st.meta.CurrentSnapshot()
	if cur == nil {
		t.Fatal("no current snapshot")
	}
	if got := cur.Summary.Properties["total-records"]; got != strconv.FormatUint(total, 10) {
		t.Errorf("total-records = %s, want %d", got, total)
	}
	seen := map[string]bool{}
	for _, f := range st.dataFiles {
		if seen[f] {
			t.Errorf("data file %s is in the table twice", f)
		}
		seen[f] = true
	}
	if len(seen) != files {
		t.Errorf("table has %d data files, want %d", len(seen), files)
	}
	if n := scanRows(t, p, id); n != int64(total) {
		t.Errorf("scan counts %d rows, want %d", n, total)
	}
	return snaps
}

func scanRows(t *testing.T, p *iceberg.Provider, id catalogs.TableIdent) int64 {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	rd := res.Reader
	defer rd.Release()
	var n int64
	for rd.Next() {
		n += rd.RecordBatch().NumRows()
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return n
}

// TestGroupCommitManyWriters is issue 10's workload, small: 16 writers ×
// 50 CommitOnce to one table through one provider all land exactly once,
// in far fewer snapshots than commits, leaving no orphan.
func TestGroupCommitManyWriters(t *testing.T) {
	const writers, each = 16, 50
	p, wh := openLocal(t, nil)
	id := newTable(t, p, "many")
	receipts := make([][]catalogs.WriteReceipt, writers)
	want := map[string]uint64{}
	t0 := time.Now()
	for w := range writers {
		for i := range each {
			rows := int64(1 + (w+i)%3)
			receipts[w] = append(receipts[w], stage(t, p, id, int64(w*1000+i*10), rows))
			want[fmt.Sprintf("w%d-%d", w, i)] = uint64(rows)
		}
	}
	t.Logf("staged in %v", time.Since(t0))
	t0 = time.Now()
	outs := make([][]catalogs.CommitOutcome, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for i := range each {
				o, err := p.CommitOnce(context.Background(), id, fmt.Sprintf("w%d-%d", w, i), receipts[w][i:i+1])
				if err != nil {
					t.Errorf("writer %d commit %d: %v", w, i, err)
					return
				}
				if o.Duplicate {
					t.Errorf("writer %d commit %d: Duplicate", w, i)
				}
				outs[w] = append(outs[w], o)
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("committed in %v", time.Since(t0))
	st := checkNoOrphans(t, wh, id)
	landed := checkExactlyOnce(t, p, id, st, want, writers*each)
	snaps := len(st.meta.Snapshots())
	t.Logf("%d commits in %d snapshots", writers*each, snaps)
	if snaps > writers*each/2 {
		t.Errorf("%d commits made %d snapshots: group commit merged almost nothing", writers*each, snaps)
	}
	// Each caller was told its own commit's snapshot.
	for w := range writers {
		for i, o := range outs[w] {
			if s := landed[fmt.Sprintf("w%d-%d", w, i)]; s != o.SnapshotID {
				t.Fatalf("writer %d commit %d: outcome snapshot %d, its id is in %d", w, i, o.SnapshotID, s)
			}
		}
	}
}

// TestGroupCommitTwoGateways commits concurrently through two providers on
// one catalog (two gateways): their rounds race compare-and-swaps, every
// commit lands once, and lost attempts leave no metadata or manifest.
func TestGroupCommitTwoGateways(t *testing.T) {
	const writers, each = 6, 10
	dir := t.TempDir()
	props, err := iceberg.EmbeddedProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	props[lake.PropCommitMinWait] = "1"
	props[lake.PropCommitMaxWait] = "20"
	props[lake.PropCommitRetries] = "100"
	var gws [2]*iceberg.Provider
	for i := range gws {
		if gws[i], err = iceberg.Open(context.Background(), iceberg.EmbeddedCatalogName, props); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gws[i].Close() })
	}
	id := newTable(t, gws[0], "two")
	want := map[string]uint64{}
	type job struct {
		gw  int
		cid string
		r   catalogs.WriteReceipt
	}
	var jobs [2][writers][]job
	for g := range gws {
		for w := range writers {
			for i := range each {
				cid := fmt.Sprintf("g%d-w%d-%d", g, w, i)
				jobs[g][w] = append(jobs[g][w], job{g, cid, stage(t, gws[g], id, int64(g*100000+w*1000+i*10), 2)})
				want[cid] = 2
			}
		}
	}
	var retried uint32
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range gws {
		for w := range writers {
			wg.Go(func() {
				<-start
				for _, j := range jobs[g][w] {
					o, err := gws[j.gw].CommitOnce(context.Background(), id, j.cid, []catalogs.WriteReceipt{j.r})
					if err != nil {
						t.Errorf("%s: %v", j.cid, err)
						return
					}
					mu.Lock()
					retried += o.Retried
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	st := checkNoOrphans(t, filepath.Join(dir, "warehouse"), id)
	checkExactlyOnce(t, gws[1], id, st, want, len(want))
	t.Logf("%d commits through 2 gateways: %d snapshots, %d conflicts retried", len(want), len(st.meta.Snapshots()), retried)
	if retried == 0 {
		t.Log("no conflict between the gateways this run: the orphan check proved little")
	}
}

// TestCommitDuplicate: a commit id landed with these receipts' files is a
// retry (Duplicate false); landed with other files it is a duplicate, and
// nothing of the second receipts is in the table.
func TestCommitDuplicate(t *testing.T) {
	for _, group := range []string{"true", "false"} {
		t.Run("group="+group, func(t *testing.T) {
			p, _ := openLocal(t, map[string]string{iceberg.PropCommitGroupEnabled: group})
			ctx := context.Background()
			id := newTable(t, p, "dup")
			r1 := stage(t, p, id, 0, 5)
			o1, err := p.CommitOnce(ctx, id, "key", []catalogs.WriteReceipt{r1})
			if err != nil || o1.Duplicate {
				t.Fatalf("first CommitOnce = %+v, %v", o1, err)
			}
			o2, err := p.CommitOnce(ctx, id, "key", []catalogs.WriteReceipt{r1})
			if err != nil || o2.Duplicate || o2.SnapshotID != o1.SnapshotID {
				t.Fatalf("retried CommitOnce = %+v, %v; want snapshot %d, not a duplicate", o2, err, o1.SnapshotID)
			}
			r2 := stage(t, p, id, 100, 7)
			o3, err := p.CommitOnce(ctx, id, "key", []catalogs.WriteReceipt{r2})
			if err != nil || !o3.Duplicate || o3.SnapshotID != o1.SnapshotID {
				t.Fatalf("CommitOnce with other files = %+v, %v; want snapshot %d, a duplicate", o3, err, o1.SnapshotID)
			}
			if err := p.Discard(ctx, id, []catalogs.WriteReceipt{r2}); err != nil {
				t.Fatal(err)
			}
			if n := scanRows(t, p, id); n != 5 {
				t.Errorf("rows = %d, want 5 (the duplicate added nothing, its discard removed nothing)", n)
			}
			// An overwrite under the landed key is answered the same way.
			o4, err := p.CommitOverwrite(ctx, id, "key", []catalogs.WriteReceipt{r1})
			if err != nil || o4.Duplicate || o4.SnapshotID != o1.SnapshotID {
				t.Fatalf("CommitOverwrite under the landed key = %+v, %v", o4, err)
			}
		})
	}
}

// TestCommitDuplicateConcurrent: two ingests with one idempotency key at
// once (in one round or two): one lands, the other is told Duplicate.
func TestCommitDuplicateConcurrent(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := newTable(t, p, "dupc")
	const pairs = 8
	var wg sync.WaitGroup
	outs := make([][2]catalogs.CommitOutcome, pairs)
	var rows int64
	for k := range pairs {
		for j := range 2 {
			r := stage(t, p, id, int64(k*100+j*10), int64(1+j))
			wg.Go(func() {
				o, err := p.CommitOnce(ctx, id, fmt.Sprint("key-", k), []catalogs.WriteReceipt{r})
				if err != nil {
					t.Errorf("key %d writer %d: %v", k, j, err)
				}
				outs[k][j] = o
			})
		}
	}
	wg.Wait()
	for k := range pairs {
		a, b := outs[k][0], outs[k][1]
		if a.Duplicate == b.Duplicate || a.SnapshotID != b.SnapshotID {
			t.Errorf("key %d: outcomes %+v and %+v, want one duplicate of the other's snapshot", k, a, b)
		}
		if a.Duplicate {
			rows += 2
		} else {
			rows++
		}
	}
	if n := scanRows(t, p, id); n != rows {
		t.Errorf("rows = %d, want %d (one writer per key)", n, rows)
	}
}
