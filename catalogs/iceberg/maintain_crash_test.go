package iceberg

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// TestExpireCrashLeavesNoOrphan: a gateway killed after its expiry
// commit landed and before it deleted anything leaves files no snapshot
// reaches; after the restart the orphan reclaimer deletes every one of
// them (not the files a live unit of work holds), the retained snapshots
// read whole, and a second expiry finds nothing to do. (Data files whose
// deletion a retained snapshot records stay referenced, by that record,
// until that snapshot expires too.)
func TestExpireCrashLeavesNoOrphan(t *testing.T) {
	e := newExpired(t, map[string]string{table.MaxSnapshotAgeMsKey: "1"})
	ctx := context.Background()
	tbl, err := e.p.load(ctx, e.id)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.p.planExpiry(ctx, e.id, tbl, catalogs.MaintainRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.p.commitExpiry(ctx, tbl, plan); err != nil { // then the process dies
		t.Fatal(err)
	}
	if len(unreferencedFiles(t, e.p, e.id)) == 0 {
		t.Fatal("the interrupted expiry left no unreferenced file: the test shows nothing")
	}
	restarted := openReplicaOf(t, e.dir)
	backdate(t, filepath.Join(e.dir, "warehouse"), 2*time.Hour)
	if _, err := restarted.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour, Held: e.holds}); err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	held := receiptFiles(t, e.id, e.held)
	for _, f := range unreferencedFiles(t, restarted, e.id) {
		if !slices.Contains(held, f) {
			t.Errorf("orphan after the restart's reclaim: %s", f)
		}
	}
	for _, f := range held {
		if !exists(f) {
			t.Errorf("held file %s deleted", f)
		}
	}
	now, err := restarted.load(ctx, e.id)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := snapshotRows(t, now, e.snaps[1]), wantRowsOf([2]int64{0, 20}); !slices.Equal(got, want) {
		t.Errorf("the tag reads %v, want %v", got, want)
	}
	if got, want := snapshotRows(t, now, e.snaps[5]), wantRowsOf([2]int64{1000, 3}); !slices.Equal(got, want) {
		t.Errorf("the current snapshot reads %v, want %v", got, want)
	}
	rep, err := restarted.Maintain(ctx, e.id, catalogs.MaintainRequest{Tasks: expireOnly})
	if err != nil || len(rep.Tasks[0].ExpiredSnapshots) != 0 {
		t.Errorf("expiry after the restart = %+v, %v: want nothing left to expire", rep, err)
	}
}

// openReplicaOf opens a second provider on the embedded lake in dir, as
// the restarted gateway does.
func openReplicaOf(t *testing.T, dir string) *Provider {
	t.Helper()
	p, err := OpenEmbedded(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
