package txn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// recorder is a backend that records what it was asked to commit and
// discard; the transaction logic is what is under test.
type recorder struct {
	mu        sync.Mutex
	committed map[string][]string // table -> receipt ids
	discarded []string
	failOn    string
}

func (r *recorder) GetTableSpec(context.Context, catalogs.TableIdent) (catalogs.TableSpec, error) {
	return catalogs.TableSpec{}, nil
}
func (r *recorder) WriteBatch(context.Context, catalogs.TableIdent, arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	return catalogs.WriteReceipt{}, nil
}
func (r *recorder) GetSecurityContext(context.Context, catalogs.TableIdent) (catalogs.SecurityContext, error) {
	return catalogs.SecurityContext{}, nil
}
func (r *recorder) Commit(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.Name == r.failOn {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrConflict, "table %s: conflict", t)
	}
	for _, x := range rs {
		r.committed[t.Name] = append(r.committed[t.Name], string(x.Metadata))
	}
	return catalogs.CommitOutcome{SnapshotID: 1, CommittedAt: time.Now()}, nil
}
func (r *recorder) Discard(_ context.Context, _ catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range rs {
		r.discarded = append(r.discarded, string(x.Metadata))
	}
	return nil
}

func rc(id string) catalogs.WriteReceipt {
	b, _ := json.Marshal(id)
	return catalogs.WriteReceipt{Metadata: b, RowCount: 1}
}

func tbl(name string) catalogs.TableIdent {
	return catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: name}
}

func TestCommitAndRollback(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}}
	ctx := context.Background()

	a, _ := m.Begin("realm/alice", "s1")
	if _, err := a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("a1")}, false); err != nil {
		t.Fatal(err)
	}
	a.add(tbl("t2"), p, Append, []catalogs.WriteReceipt{rc("a2")}, false)
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("a3")}, false)
	if len(p.committed) != 0 {
		t.Fatal("data committed before EndTransaction")
	}
	if err := m.Commit(ctx, "realm/alice", a.ID()); err != nil {
		t.Fatal(err)
	}
	if got := p.committed["t1"]; len(got) != 2 || len(p.committed["t2"]) != 1 {
		t.Fatalf("committed = %v", p.committed)
	}

	b, _ := m.Begin("realm/alice", "s1")
	b.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("b1")}, false)
	if err := m.Rollback(ctx, "realm/alice", b.ID()); err != nil {
		t.Fatal(err)
	}
	if len(p.committed["t1"]) != 2 || len(p.discarded) != 1 || p.discarded[0] != `"b1"` {
		t.Fatalf("after rollback committed=%v discarded=%v", p.committed, p.discarded)
	}
	if m.OpenCount() != 0 {
		t.Fatalf("open = %d", m.OpenCount())
	}
}

func TestEndErrors(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	ctx := context.Background()
	a, _ := m.Begin("r/alice", "")

	if err := m.Commit(ctx, "r/alice", "nope"); !errors.Is(err, catalogs.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := m.Commit(ctx, "r/mallory", a.ID()); !errors.Is(err, catalogs.ErrNotFound) {
		t.Fatalf("foreign id: %v", err)
	}
	if err := m.Commit(ctx, "r/alice", a.ID()); err != nil {
		t.Fatal(err)
	}
	err := m.Rollback(ctx, "r/alice", a.ID())
	if !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Fatalf("ended id: %v", err)
	}
	if _, err := a.add(tbl("t"), &recorder{}, Append, nil, false); !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Fatalf("add to ended: %v", err)
	}
}

func TestFailedCommitStaysRetryable(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}, failOn: "t2"}
	ctx := context.Background()
	a, _ := m.Begin("r/a", "")
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("1")}, false)
	a.add(tbl("t2"), p, Append, []catalogs.WriteReceipt{rc("2")}, false)
	a.add(tbl("t3"), p, Append, []catalogs.WriteReceipt{rc("3")}, false)
	err := m.Commit(ctx, "r/a", a.ID())
	if !errors.Is(err, catalogs.ErrConflict) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "still open") || !strings.Contains(err.Error(), "committed: c.n.t1") {
		t.Fatalf("message does not say what happened: %v", err)
	}
	if len(p.committed["t1"]) != 1 || len(p.discarded) != 0 {
		t.Fatalf("committed=%v discarded=%v", p.committed, p.discarded)
	}
	// Retried, the commit lands the rest and not t1 again.
	p.failOn = ""
	if err := m.Commit(ctx, "r/a", a.ID()); err != nil {
		t.Fatal(err)
	}
	if len(p.committed["t1"]) != 1 || len(p.committed["t2"]) != 1 || len(p.committed["t3"]) != 1 {
		t.Fatalf("committed=%v", p.committed)
	}
	// A COMMIT repeated after its reply was lost succeeds again.
	if err := m.Commit(ctx, "r/a", a.ID()); err != nil {
		t.Fatalf("repeated commit: %v", err)
	}
}

func TestRollbackAfterFailedCommit(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}, failOn: "t2"}
	ctx := context.Background()
	a, _ := m.Begin("r/a", "")
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("1")}, false)
	a.add(tbl("t2"), p, Append, []catalogs.WriteReceipt{rc("2")}, false)
	if err := m.Commit(ctx, "r/a", a.ID()); err == nil {
		t.Fatal("commit succeeded")
	}
	err := m.Rollback(ctx, "r/a", a.ID())
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "c.n.t1") {
		t.Fatalf("rollback must say t1 stays committed: %v", err)
	}
	if len(p.discarded) != 1 || p.discarded[0] != `"2"` {
		t.Fatalf("discarded = %v (t1's files are live)", p.discarded)
	}
}

// lossy is a backend whose commits land but whose replies are lost
// (lose), or whose outcome nobody can tell (blind: FindCommit fails too).
type lossy struct {
	recorder
	lose, blind bool
	ids         map[string]bool // table/commit id that landed
}

func (l *lossy) CommitOnce(ctx context.Context, t catalogs.TableIdent, id string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	l.mu.Lock()
	landed := l.ids[t.Name+"/"+id]
	l.mu.Unlock()
	if landed {
		return catalogs.CommitOutcome{SnapshotID: 1}, nil
	}
	out, err := l.Commit(ctx, t, rs)
	if err != nil {
		return out, err
	}
	l.mu.Lock()
	l.ids[t.Name+"/"+id] = true
	l.mu.Unlock()
	if l.lose || l.blind {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: connection reset", t)
	}
	return out, nil
}

func (l *lossy) FindCommit(_ context.Context, t catalogs.TableIdent, id string) (catalogs.CommitRecord, bool, error) {
	if l.blind {
		return catalogs.CommitRecord{}, false, catalogs.Errorf(catalogs.ErrUnavailable, "catalog down")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return catalogs.CommitRecord{Outcome: catalogs.CommitOutcome{SnapshotID: 1}}, l.ids[t.Name+"/"+id], nil
}

func TestLostReplyKeepsFiles(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &lossy{recorder: recorder{committed: map[string][]string{}}, lose: true, ids: map[string]bool{}}
	a, _ := m.Begin("r/a", "")
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("1")}, false)
	if err := m.Commit(context.Background(), "r/a", a.ID()); err != nil {
		t.Fatalf("a commit that landed must report success: %v", err)
	}
	if len(p.discarded) != 0 || len(p.committed["t1"]) != 1 {
		t.Fatalf("committed=%v discarded=%v", p.committed, p.discarded)
	}
}

func TestUnknownOutcomeKeepsFiles(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &lossy{recorder: recorder{committed: map[string][]string{}}, blind: true, ids: map[string]bool{}}
	ctx := context.Background()
	a, _ := m.Begin("r/a", "")
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("1")}, false)
	err := m.Commit(ctx, "r/a", a.ID())
	if !errors.Is(err, catalogs.ErrUnavailable) || !strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("err = %v", err)
	}
	// Rolled back (or expired) while the outcome still cannot be told:
	// the files stay.
	if err := m.Rollback(ctx, "r/a", a.ID()); err != nil {
		t.Fatal(err)
	}
	if len(p.discarded) != 0 {
		t.Fatalf("discarded %v of a commit that may have landed", p.discarded)
	}
}

func TestTwoTransactionsOneSessionConcurrently(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}}
	a, _ := m.Begin("r/a", "s")
	b, _ := m.Begin("r/a", "s")
	var wg sync.WaitGroup
	for _, x := range []*Txn{a, b} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 200 {
				x.add(tbl("t"), p, Append, []catalogs.WriteReceipt{rc("x")}, false)
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				if _, ok := m.ForSession("r/a", "s"); !ok {
					t.Error("session lost its transactions")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestOverwriteSupersedes(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}}
	a, _ := m.Begin("r/a", "")
	a.add(tbl("t1"), p, Append, []catalogs.WriteReceipt{rc("old")}, false)
	sup, err := a.add(tbl("t1"), p, Overwrite, []catalogs.WriteReceipt{rc("new")}, false)
	if err != nil || len(sup) != 1 || string(sup[0].Metadata) != `"old"` {
		t.Fatalf("superseded = %v, %v", sup, err)
	}
}

func TestSessionBindingAndIdleExpiry(t *testing.T) {
	m := NewManager(time.Hour, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}}
	a, _ := m.Begin("r/a", "peer:1")
	if got, ok := m.ForSession("r/a", "peer:1"); !ok || got != a {
		t.Fatal("session lookup failed")
	}
	if _, ok := m.ForSession("r/b", "peer:1"); ok {
		t.Fatal("another principal found the transaction")
	}
	if _, ok := m.ForSession("r/a", "peer:2"); ok {
		t.Fatal("another session found the transaction")
	}
	a.add(tbl("t"), p, Append, []catalogs.WriteReceipt{rc("x")}, false)
	m.expireIdle(time.Now().Add(2 * time.Hour))
	if m.OpenCount() != 0 || len(p.discarded) != 1 {
		t.Fatalf("open=%d discarded=%v", m.OpenCount(), p.discarded)
	}
	if err := m.Commit(context.Background(), "r/a", a.ID()); !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Fatalf("commit after expiry: %v", err)
	}
}

func TestCloseRollsBackOpen(t *testing.T) {
	m := NewManager(time.Hour, nil)
	p := &recorder{committed: map[string][]string{}}
	a, _ := m.Begin("r/a", "")
	a.add(tbl("t"), p, Append, []catalogs.WriteReceipt{rc("x")}, false)
	m.Close()
	if len(p.discarded) != 1 {
		t.Fatalf("discarded = %v", p.discarded)
	}
	if _, err := m.Begin("r/a", ""); !errors.Is(err, catalogs.ErrUnavailable) {
		t.Fatalf("begin after close: %v", err)
	}
}

func TestOrphanedSessionExpiresEarly(t *testing.T) {
	m := NewManager(time.Hour, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}}
	a, _ := m.Begin("r/a", "peer:1")
	b, _ := m.Begin("r/a", "peer:2")
	a.add(tbl("t"), p, Append, []catalogs.WriteReceipt{rc("a")}, false)
	b.add(tbl("t"), p, Append, []catalogs.WriteReceipt{rc("b")}, false)
	m.SessionEnded("peer:1")
	m.expireIdle(time.Now().Add(DefaultOrphanGrace + time.Second))
	if _, err := m.Get("r/a", a.ID()); !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Fatalf("orphaned transaction still open: %v", err)
	}
	if _, err := m.Get("r/a", b.ID()); err != nil {
		t.Fatalf("live session's transaction expired: %v", err)
	}
	if len(p.discarded) != 1 || p.discarded[0] != `"a"` {
		t.Fatalf("discarded = %v", p.discarded)
	}
}

func TestHeldListsOpenReceipts(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	p := &recorder{committed: map[string][]string{}}
	a, _ := m.Begin("r/a", "")
	b, _ := m.Begin("r/b", "")
	a.add(tbl("t"), p, Append, []catalogs.WriteReceipt{rc("a")}, false)
	b.add(tbl("t"), p, Append, []catalogs.WriteReceipt{rc("b")}, false)
	b.add(tbl("u"), p, Append, []catalogs.WriteReceipt{rc("u")}, false)
	if got := m.Held(context.Background(), tbl("t")); len(got) != 2 {
		t.Fatalf("held = %v", got)
	}
	if err := m.Commit(context.Background(), "r/a", a.ID()); err != nil {
		t.Fatal(err)
	}
	if got := m.Held(context.Background(), tbl("t")); len(got) != 1 || string(got[0].Metadata) != `"b"` {
		t.Fatalf("held after commit = %v", got)
	}
}
