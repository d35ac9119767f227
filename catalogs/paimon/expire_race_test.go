package paimon_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// TestPaimonExpireBesideWriters: eight writers append while expiry runs
// in a loop with the most aggressive retention (one snapshot, 1 ms): no
// writer sees an error, every row lands exactly once and the table reads
// whole at the end.
func TestPaimonExpireBesideWriters(t *testing.T) {
	e := newExpiring(t, map[string]string{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
	ctx := context.Background()
	base := len(scanRendered(t, e.p, e.id))
	const writers, commits, rows = 8, 6, 4
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan error, writers*commits+1)
	for w := range writers {
		wg.Go(func() {
			for c := range commits {
				from := int64(10000 + (w*commits+c)*rows)
				if _, err := e.p.CommitOnce(ctx, e.id, fmt.Sprintf("w%d-%d", w, c), stage(t, e.p, e.id, from, rows)); err != nil {
					errs <- err
				}
			}
		})
	}
	var runs, expired int
	maint := make(chan struct{})
	go func() {
		defer close(maint)
		for !done.Load() {
			rep, err := e.p.Maintain(ctx, e.id, catalogs.MaintainRequest{Held: e.holds})
			if err != nil {
				errs <- err
				return
			}
			runs++
			expired += len(rep.Tasks[0].ExpiredSnapshots)
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	done.Store(true)
	<-maint
	close(errs)
	for err := range errs {
		t.Errorf("error beside expiry: %v", err)
	}
	got := scanRendered(t, e.p, e.id)
	if want := base + writers*commits*rows; len(got) != want {
		t.Errorf("rows = %d, want %d", len(got), want)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r] {
			t.Errorf("row %s landed twice", r)
		}
		seen[r] = true
	}
	t.Logf("%d expiry runs expired %d snapshots", runs, expired)
	if expired == 0 {
		t.Error("nothing expired beside the writers")
	}
}
