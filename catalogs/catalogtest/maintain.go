package catalogtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// testMaintainer: maintenance keeps what it promises to keep, whatever
// the table's retention says. A task the backend does not run is
// ErrInvalidArgument naming it and the table; a dry run changes no file
// and no snapshot; KeepNewerThan keeps every young snapshot; a run of
// every task with no floor leaves every row readable, an expiry leaves
// the current snapshot current, and the staged files a live unit of work
// holds (Held) still commit afterwards.
func (s suite) testMaintainer(t *testing.T) {
	in, id := s.setup(t, "maintain")
	mt, ok := in.Provider.(catalogs.Maintainer)
	skipUnless(t, ok, "catalogs.Maintainer")
	ctx := context.Background()
	if len(mt.MaintainTasks()) == 0 {
		t.Fatal("MaintainTasks lists no task")
	}
	for i := range int64(3) {
		if _, err := commit(ctx, in, id, "maintain-"+string(rune('a'+i)), []catalogs.WriteReceipt{write(t, in, id, i*10, 10)}); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	held := write(t, in, id, 100, 5)
	holds := func(_ context.Context, table catalogs.TableIdent) []catalogs.WriteReceipt {
		if table.Key() == id.Key() {
			return []catalogs.WriteReceipt{held}
		}
		return nil
	}
	run := func(req catalogs.MaintainRequest) catalogs.MaintainReport {
		t.Helper()
		var rep catalogs.MaintainReport
		err := call(t, "Maintain", func() (err error) { rep, err = mt.Maintain(ctx, id, req); return err })
		if err != nil {
			t.Fatalf("Maintain(%+v): %v", req, err)
		}
		return rep
	}
	_, err := mt.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{"no_such_task"}})
	wantKind(t, "Maintain of an unknown task", err, catalogs.ErrInvalidArgument, id.Name, "no_such_task")

	spec := func() *int64 {
		sp, err := in.Provider.GetTableSpec(ctx, id)
		if err != nil {
			t.Fatalf("GetTableSpec: %v", err)
		}
		return sp.CurrentSnapshotID
	}
	before, current := s.files(t, in), spec()
	rep := run(catalogs.MaintainRequest{DryRun: true, Held: holds})
	for _, tr := range rep.Tasks {
		if tr.Committed {
			t.Errorf("dry run: task %s committed", tr.Task)
		}
	}
	s.sameFiles(t, in, "a dry run", before)

	// An expiry with a floor above every snapshot's age changes nothing.
	expires := slices.Contains(mt.MaintainTasks(), catalogs.TaskExpireSnapshots)
	if expires {
		rep = run(catalogs.MaintainRequest{Tasks: []string{catalogs.TaskExpireSnapshots}, KeepNewerThan: time.Hour, Held: holds})
		for _, tr := range rep.Tasks {
			if len(tr.ExpiredSnapshots) > 0 {
				t.Errorf("task %s expired snapshots %v younger than KeepNewerThan", tr.Task, tr.ExpiredSnapshots)
			}
		}
		s.sameFiles(t, in, "an expiry that kept every snapshot", before)
	}

	// Every task: whatever it rewrites, every row reads as before.
	run(catalogs.MaintainRequest{Held: holds})
	if got := rows(t, in, id); got != 30 {
		t.Errorf("rows after maintenance = %d, want 30", got)
	}
	current = spec()
	// Expiry alone: the current snapshot stays current.
	if expires {
		run(catalogs.MaintainRequest{Tasks: []string{catalogs.TaskExpireSnapshots}, Held: holds})
	}
	if s.cfg.Snapshots && expires {
		if now := spec(); now == nil || current == nil || *now != *current {
			t.Errorf("current snapshot after maintenance = %v, want %v", now, current)
		}
	}
	if _, err := commit(ctx, in, id, "maintain-held", []catalogs.WriteReceipt{held}); err != nil {
		t.Fatalf("commit of the held receipt after maintenance: %v", err)
	}
	if got := rows(t, in, id); got != 35 {
		t.Errorf("rows after committing the held receipt = %d, want 35", got)
	}
}
