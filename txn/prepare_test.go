package txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// A prepared transaction hands its receipts out and is no longer the
// reaper's or Close's: neither discards them.
func TestPrepareHandsReceiptsOut(t *testing.T) {
	m := NewManager(time.Minute, nil, WithOrphanGrace(time.Millisecond))
	p := &recorder{committed: map[string][]string{}}
	ctx := context.Background()
	a, _ := m.Begin("r/a", "s")
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("1")}, false)
	a.add(tbl("t2"), p, Append, []catalogs.WriteReceipt{rc("2")}, false)
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("3")}, false)

	if _, err := m.Prepare(ctx, "r/b", a.ID(), nil); !errors.Is(err, catalogs.ErrNotFound) {
		t.Fatalf("prepare by another owner: %v", err)
	}
	if _, err := m.Prepare(ctx, "r/a", a.ID(), func(Staged) error { return errors.New("cannot encode") }); err == nil {
		t.Fatal("a failing hand-out must fail Prepare")
	}
	got, err := m.Prepare(ctx, "r/a", a.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Table.Name != "t1" || len(got[0].Receipts) != 2 || got[1].Table.Name != "t2" {
		t.Fatalf("prepared = %+v", got)
	}
	for _, end := range []func(context.Context, string, string) error{m.Commit, m.Rollback} {
		if err := end(ctx, "r/a", a.ID()); !errors.Is(err, catalogs.ErrFailedPrecondition) {
			t.Fatalf("end of a prepared transaction: %v", err)
		}
	}
	if _, err := m.Prepare(ctx, "r/a", a.ID(), nil); !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Fatalf("second prepare: %v", err)
	}
	m.SessionEnded("s")
	m.expireIdle(time.Now().Add(time.Hour))
	m.Close()
	if len(p.discarded) != 0 || len(p.committed) != 0 {
		t.Fatalf("after prepare: committed=%v discarded=%v", p.committed, p.discarded)
	}
}

// A transaction that cannot be handed out whole stays open.
func TestPrepareRefusesAndStaysOpen(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}}
	ctx := context.Background()
	a, _ := m.Begin("r/a", "")
	a.add(tbl("t1"), p, Overwrite, []catalogs.WriteReceipt{rc("1")}, false)
	if _, err := m.Prepare(ctx, "r/a", a.ID(), nil); !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Fatalf("prepare of a replace: %v", err)
	}
	if err := m.Rollback(ctx, "r/a", a.ID()); err != nil {
		t.Fatalf("the refused transaction is not open: %v", err)
	}

	// Partly committed by an earlier COMMIT.
	p.failOn = "t2"
	b, _ := m.Begin("r/a", "")
	b.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("1")}, false)
	b.add(tbl("t2"), p, Append, []catalogs.WriteReceipt{rc("2")}, false)
	if err := m.Commit(ctx, "r/a", b.ID()); err == nil {
		t.Fatal("commit should fail on t2")
	}
	if _, err := m.Prepare(ctx, "r/a", b.ID(), nil); !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Fatalf("prepare of a partly committed transaction: %v", err)
	}
}

// CommitReceipts goes through the landed-commit check: a lost reply is a
// success, a repeat appends nothing, and a failed commit discards nothing.
func TestCommitReceipts(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &lossy{recorder: recorder{committed: map[string][]string{}}, lose: true, ids: map[string]bool{}}
	ctx := context.Background()
	tables := []Staged{{Table: tbl("t1"), Provider: p, Receipts: []catalogs.WriteReceipt{rc("1"), rc("2")}}}
	if _, err := m.CommitReceipts(ctx, "", tables); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("empty commit id: %v", err)
	}
	for range 2 {
		outs, err := m.CommitReceipts(ctx, "c1", tables)
		if err != nil || len(outs) != 1 || outs[0].SnapshotID != 1 {
			t.Fatalf("outs=%v err=%v", outs, err)
		}
	}
	if len(p.committed["t1"]) != 2 {
		t.Fatalf("committed = %v (a repeat must append nothing)", p.committed)
	}
	p.failOn = "t2"
	_, err := m.CommitReceipts(ctx, "c2", []Staged{{Table: tbl("t2"), Provider: p, Receipts: []catalogs.WriteReceipt{rc("3")}}})
	if !errors.Is(err, catalogs.ErrConflict) || len(p.discarded) != 0 {
		t.Fatalf("err=%v discarded=%v", err, p.discarded)
	}
}
