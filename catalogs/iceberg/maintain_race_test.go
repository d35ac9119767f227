package iceberg

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// TestMaintainBesideWriters: eight writers append while expiry and
// rewrites run in a loop with the most aggressive retention (1 ms, one
// snapshot): no writer sees an error, every row lands exactly once, and
// the table reads whole after every run (no live file deleted).
func TestMaintainBesideWriters(t *testing.T) {
	p, _, id, _ := smallFiles(t)
	ctx := context.Background()
	tbl, err := p.cat.LoadTable(ctx, table.Identifier{"default", "small"})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(ice.Properties{table.MaxSnapshotAgeMsKey: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	const writers, commits, rows = 8, 8, 5
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan error, writers*commits)
	for w := range int64(writers) {
		wg.Go(func() {
			for c := range int64(commits) {
				from := 1000 + (w*commits+c)*rows
				if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stageIn(t, p, id, from, rows)}); err != nil {
					errs <- err
				}
			}
		})
	}
	var runs, committed, abandoned int
	maint := make(chan struct{})
	go func() {
		defer close(maint)
		for !done.Load() {
			rep, err := p.Maintain(ctx, id, catalogs.MaintainRequest{})
			if err != nil {
				errs <- err
				return
			}
			runs++
			for _, tr := range rep.Tasks {
				if tr.Committed {
					committed++
				}
				if tr.Abandoned != "" {
					abandoned++
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	done.Store(true)
	<-maint
	close(errs)
	for err := range errs {
		t.Errorf("error beside maintenance: %v", err)
	}
	got := map[int64]int{}
	for _, r := range snapshotRows(t, mustLoad(t, p, id), mustLoad(t, p, id).CurrentSnapshot().SnapshotID) {
		got[r[0].(int64)]++
	}
	if want := 60 + writers*commits*rows; len(got) != want {
		t.Errorf("distinct rows = %d, want %d", len(got), want)
	}
	for k, n := range got {
		if n != 1 {
			t.Errorf("row %d landed %d times", k, n)
		}
	}
	t.Logf("%d maintenance runs: %d task commits, %d abandoned", runs, committed, abandoned)
	if committed == 0 {
		t.Error("no maintenance task committed beside the writers")
	}
}

func mustLoad(t *testing.T, p *Provider, id catalogs.TableIdent) *table.Table {
	t.Helper()
	tbl, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
