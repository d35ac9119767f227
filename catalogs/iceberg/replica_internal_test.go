package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// TestReplicasCommitAFileOnce: two providers sharing one catalog (two
// replicas) commit the same receipts under two commit ids at the same
// instant, a few times over. Each time one lands and the other is refused
// with ErrFailedPrecondition naming the file and the snapshot that added
// it, never a second snapshot of the same rows; the landed id repeated on
// the other replica answers its snapshot.
func TestReplicasCommitAFileOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *Provider {
		p, err := OpenEmbedded(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	reps := []*Provider{open(), open()}
	for trial := range 4 {
		id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: fmt.Sprintf("twice%d", trial)}
		if _, err := reps[0].CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
			t.Fatal(err)
		}
		rs := []catalogs.WriteReceipt{stageIn(t, reps[0], id, 0, 10)}
		var start sync.WaitGroup
		start.Add(1)
		res := make([]chan result, 2)
		for i, p := range reps {
			res[i] = goCommit(func() (catalogs.CommitOutcome, error) {
				start.Wait()
				return p.CommitOnce(ctx, id, fmt.Sprintf("job-%d", i), rs)
			})
		}
		start.Done()
		var landed []int
		for i := range res {
			r := recv(t, res[i])
			switch {
			case r.err == nil:
				landed = append(landed, i)
			case !errors.Is(r.err, catalogs.ErrFailedPrecondition) || !strings.Contains(r.err.Error(), "already in snapshot"):
				t.Errorf("trial %d: replica %d: %v; want ErrFailedPrecondition (the file is in a snapshot)", trial, i, r.err)
			}
		}
		if len(landed) != 1 {
			t.Fatalf("trial %d: %d commits landed, want exactly one", trial, len(landed))
		}
		tbl, err := reps[0].load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tbl.Metadata().Snapshots()); n != 1 {
			t.Errorf("trial %d: %d snapshots, want 1", trial, n)
		}
		w := landed[0]
		again, err := reps[1-w].CommitOnce(ctx, id, fmt.Sprintf("job-%d", w), rs)
		if err != nil || again.Duplicate || again.SnapshotID != tbl.Metadata().Snapshots()[0].SnapshotID {
			t.Errorf("trial %d: the landed id on the other replica = %+v, %v; want its snapshot", trial, again, err)
		}
	}
}
