package paimon_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// conformance is what the Paimon backend declares: it stages Parquet
// files, commits by compare-and-swap (put-if-absent of snapshot-N), has
// field ids and snapshots, writes one file per bucket, reads a
// transaction's staged writes through ScanStaged, and cannot store month
// intervals.
func conformance() catalogtest.Config {
	return catalogtest.Config{
		StagesFiles: true, CompareAndSwap: true, FieldIDs: true, Snapshots: true, StagedScans: true,
		Layout:         catalogtest.LayoutOneFilePerBucket,
		UnstorableType: arrow.FixedWidthTypes.MonthInterval,
		DropsUnwritten: true,
	}
}

// openLocal opens a catalog "lake" on a fresh local warehouse with the
// database "default".
func openLocal(t testing.TB, extra map[string]string) (*paimon.Provider, string) {
	t.Helper()
	wh := t.TempDir()
	props := map[string]string{paimon.PropWarehouse: wh, paimon.PropCreateNamespaces: "default",
		lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20"}
	for k, v := range extra {
		props[k] = v
	}
	p, err := paimon.Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	return p, wh
}

func listDir(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, root))
		}
		return nil
	})
	return out, err
}

func TestConformanceLocal(t *testing.T) {
	cfg := conformance()
	cfg.PlainPlans = true
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		p, wh := openLocal(t, nil)
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
			Replica:   func(t *testing.T) catalogs.Provider { return openReplica(t, wh) },
		}
	}}, cfg)
}

func TestRegistered(t *testing.T) {
	p, err := catalogs.Open(context.Background(), paimon.Type, "lake", map[string]string{paimon.PropWarehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*paimon.Provider); !ok {
		t.Fatalf("catalogs.Open(%q) = %T", paimon.Type, p)
	}
}

// TestManyCommitters: 8 committers × 20 commits to one table, each
// commit with its own commit id; every commit lands once, no row is lost
// or duplicated, and the snapshots are numbered 1..160 without gaps.
func TestManyCommitters(t *testing.T) {
	p, _ := openLocal(t, map[string]string{lake.PropCommitRetries: "1000"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "many"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	const writers, commits = 8, 20
	snaps := make([][]int64, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for c := range commits {
				b := catalogtest.Batch(int64(w*1000+c*10), 3)
				r, err := p.WriteBatch(ctx, id, b)
				b.Release()
				if err != nil {
					errs[w] = err
					return
				}
				out, err := p.CommitOnce(ctx, id, fmt.Sprintf("w%d-c%d", w, c), []catalogs.WriteReceipt{r})
				if err != nil {
					errs[w] = err
					return
				}
				snaps[w] = append(snaps[w], out.SnapshotID)
			}
		})
	}
	wg.Wait()
	var all []int64
	for w := range writers {
		if errs[w] != nil {
			t.Fatalf("writer %d: %v", w, errs[w])
		}
		all = append(all, snaps[w]...)
	}
	slices.Sort(all)
	for i, s := range all {
		if s != int64(i+1) {
			t.Fatalf("snapshot ids %v: want 1..%d without gaps or repeats", all, writers*commits)
		}
	}
	res, err := p.Scan(ctx, id, catalogs.ScanRequest{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	seen := map[int64]int{}
	for res.Reader.Next() {
		for _, v := range res.Reader.RecordBatch().Column(0).(*array.Int64).Int64Values() {
			seen[v]++
		}
	}
	if len(seen) != writers*commits*3 {
		t.Errorf("%d distinct rows, want %d", len(seen), writers*commits*3)
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("row %d seen %d times", v, n)
		}
	}
}

// TestClientTableOptions: a client sets the table's layout only; an option
// every Paimon writer would obey (external paths, another file format) or
// a bucket count out of range is refused naming it, and nothing is created.
func TestClientTableOptions(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "opts"}
	for _, opts := range []map[string]string{
		{"data-file.external-paths": "file:///tmp"},
		{"file.format": "orc"},
		{"bucket": "0"},
		{"bucket": "100000"},
		{"bucket": "x"},
	} {
		_, err := p.CreateTable(ctx, id, catalogtest.Schema, opts)
		if !errors.Is(err, catalogs.ErrInvalidArgument) {
			t.Fatalf("options %v: err = %v, want InvalidArgument", opts, err)
		}
		for k := range opts {
			if !strings.Contains(err.Error(), k) {
				t.Errorf("error %q does not name option %q", err, k)
			}
		}
	}
	if files, _ := listDir(filepath.Join(wh, "default.db", "opts")); len(files) != 0 {
		t.Fatalf("a refused create left %v", files)
	}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"bucket": "4", "bucket-key": "id"}); err != nil {
		t.Fatalf("layout options: %v", err)
	}
}
