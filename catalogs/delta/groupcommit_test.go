package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// TestGroupCommit: 16 writers × 50 commits (CommitOnce, one commit id
// each) to one table land every row once, in fewer log versions than
// commits; a version of several commits holds one txn per commit id and
// each id's rows in commitInfo, so FindCommit answers every id with its
// own version and rows; checkpoints are written as the versions pass
// multiples of 10; delta-rs (when FLIGHTGW_DELTALAKE or .venv-delta has
// it) reads the same 800 rows at the same version.
func TestGroupCommit(t *testing.T) {
	const writers, commits = 16, 50
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "gc")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	outs := make([][]catalogs.CommitOutcome, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers*commits)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range commits {
				n := int64(w*commits + c)
				b := catalogtest.Batch(n, 1)
				r, err := p.WriteBatch(ctx, id, b)
				b.Release()
				if err != nil {
					errs <- err
					return
				}
				out, err := p.CommitOnce(ctx, id, fmt.Sprintf("w%d-c%d", w, c), []catalogs.WriteReceipt{r})
				if err != nil {
					errs <- err
					return
				}
				outs[w] = append(outs[w], out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := p.Close(); err != nil { // the rounds' checkpoints
		t.Fatal(err)
	}
	for err := range errs {
		t.Fatal(err)
	}
	bs, n, err := scanAll(t, p, id)
	if err != nil || n != writers*commits {
		t.Fatalf("scan: %d rows, %v; want %d", n, err, writers*commits)
	}
	seen := map[int64]bool{}
	for _, b := range bs {
		for _, v := range b.Column(0).(*array.Int64).Int64Values() {
			if seen[v] {
				t.Fatalf("row %d twice", v)
			}
			seen[v] = true
		}
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	versions := *spec.CurrentSnapshotID
	t.Logf("%d commits in %d versions", writers*commits, versions)
	if versions >= writers*commits {
		t.Fatalf("%d versions for %d commits: nothing grouped", versions, writers*commits)
	}
	for w := range writers {
		for c, out := range outs[w] {
			if out.Duplicate {
				t.Fatalf("w%d-c%d answered as a Duplicate", w, c)
			}
			rec, ok, err := p.FindCommit(ctx, id, fmt.Sprintf("w%d-c%d", w, c))
			if err != nil || !ok || rec.Outcome.SnapshotID != out.SnapshotID || rec.RowCount != 1 {
				t.Fatalf("FindCommit w%d-c%d: %+v %v %v; want version %d, 1 row", w, c, rec, ok, err, out.SnapshotID)
			}
		}
	}
	// A grouped version: one txn per commit, commitInfo's rows per id.
	dir := filepath.Join(wh, "default", "gc", "_delta_log")
	grouped := false
	for v := int64(1); v <= versions && !grouped; v++ {
		b, err := os.ReadFile(filepath.Join(dir, dcodec.CommitName(v)))
		if err != nil {
			continue // expired? never here
		}
		acts, err := dcodec.ParseCommit("v", b)
		if err != nil {
			t.Fatal(err)
		}
		var txns, adds int
		var rows map[string]uint64
		for _, a := range acts {
			switch {
			case a.Txn != nil:
				txns++
			case a.Add != nil:
				adds++
			case a.CommitInfo != nil:
				if raw, ok := a.CommitInfo.Fields["flightgw.commitRows"]; ok {
					if err := json.Unmarshal(raw, &rows); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if txns > 1 {
			grouped = true
			if adds != txns || len(rows) != txns {
				t.Fatalf("version %d: %d txns, %d adds, rows %v", v, txns, adds, rows)
			}
		}
	}
	if !grouped {
		t.Fatal("no version holds several commits")
	}
	if _, err := os.Stat(filepath.Join(dir, dcodec.LastCheckpointName)); err != nil && versions >= 10 {
		t.Fatalf("no _last_checkpoint after %d versions: %v", versions, err)
	}
	// delta-rs agrees, row by row.
	if py := deltaPython(t); py != "" {
		dr := readDeltalake(t, py, filepath.Join(wh, "default", "gc"))
		if dr.Version != versions || len(dr.Rows) != writers*commits {
			t.Fatalf("deltalake reads version %d, %d rows; want %d, %d", dr.Version, len(dr.Rows), versions, writers*commits)
		}
		for i, r := range dr.Rows {
			if r[0] == nil || *r[0] != fmt.Sprint(i) {
				t.Fatalf("deltalake row %d: %v", i, r)
			}
		}
	}
}
