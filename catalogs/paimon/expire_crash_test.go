package paimon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// TestPaimonExpireCrashLeavesNoOrphan: a gateway killed after expiry
// deleted the snapshot files and before it deleted what only they
// reached leaves unreferenced files; after the restart the orphan
// reclaimer deletes exactly the ones expiry would have (C's data files,
// the expired manifest lists), keeps the tag's, the retained snapshots'
// and the held files, and the table reads as before.
func TestPaimonExpireCrashLeavesNoOrphan(t *testing.T) {
	e := newExpiring(t, map[string]string{"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"})
	ctx := context.Background()
	want := scanRendered(t, e.p, e.id)
	dry, err := e.p.Maintain(ctx, e.id, catalogs.MaintainRequest{DryRun: true, Held: e.holds})
	if err != nil {
		t.Fatal(err)
	}
	// The first step of expiry, then the kill.
	for i := 1; i <= 4; i++ {
		if err := os.Remove(filepath.Join(e.dir, "snapshot", fmt.Sprintf("snapshot-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(e.dir, "snapshot", "EARLIEST"), []byte("5"))
	before := tableFiles(t, e.dir)
	restarted, err := paimon.Open(ctx, "lake", map[string]string{paimon.PropWarehouse: e.wh, paimon.PropCreateNamespaces: "default"})
	if err != nil {
		t.Fatal(err)
	}
	// On the clock newExpiring moved on: the setup's snapshots are old.
	paimon.SetNow(restarted, func() time.Time { return time.Now().Add(10 * time.Minute) })
	backdate(t, e.dir, 2*time.Hour)
	if _, err := restarted.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour, Held: e.holds}); err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	var gone []string
	for _, f := range before {
		if !slices.Contains(tableFiles(t, e.dir), f) {
			gone = append(gone, filepath.Join(e.dir, f))
		}
	}
	var planned []string
	for _, f := range dry.Tasks[0].Files {
		planned = append(planned, filepath.Join(e.wh, f))
	}
	if len(gone) == 0 {
		t.Error("the reclaimer deleted nothing the interrupted expiry left")
	}
	for _, f := range gone {
		if !slices.Contains(planned, f) {
			t.Errorf("the reclaimer deleted %s, which expiry would have kept", f)
		}
	}
	if got := scanRendered(t, restarted, e.id); !slices.Equal(got, want) {
		t.Errorf("after the restart the table reads %v, want %v", got, want)
	}
	// What is left of the plan is named by the DELETE entries of the
	// retained snapshots' manifests: the expiry of those snapshots
	// deletes it.
	for i := range 2 {
		if _, err := restarted.CommitOnce(ctx, e.id, fmt.Sprintf("after-%d", i), stage(t, restarted, e.id, int64(500+10*i), 3)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	rep, err := restarted.Maintain(ctx, e.id, catalogs.MaintainRequest{Held: e.holds})
	if err != nil || !slices.Equal(rep.Tasks[0].ExpiredSnapshots, []int64{5, 6}) {
		t.Fatalf("the next expiry = %+v, %v: want snapshots 5 and 6", rep, err)
	}
	for _, f := range planned {
		if exists(f) {
			t.Errorf("%s, planned by the interrupted expiry, is still there after the next", f)
		}
	}
}
