package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// held opens a provider whose queued rounds wait until the test lets them
// go: the first round blocks on release, so that later commits queue
// behind it. rounds receives each round's commit ids.
func held(t *testing.T) (p *Provider, id catalogs.TableIdent, release func(), rounds chan []string) {
	t.Helper()
	p, err := OpenEmbedded(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	id = catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "held"}
	if _, err := p.CreateTable(context.Background(), id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	rounds = make(chan []string, 100)
	var once sync.Once
	p.groups.OnRound = func(batch []*member) {
		ids := make([]string, len(batch))
		for i, m := range batch {
			ids[i] = m.id
		}
		rounds <- ids
		<-gate
	}
	return p, id, func() { once.Do(func() { close(gate) }) }, rounds
}

func stageIn(t *testing.T, p *Provider, id catalogs.TableIdent, from, n int64) catalogs.WriteReceipt {
	t.Helper()
	b := catalogtest.Batch(from, n)
	defer b.Release()
	r, err := p.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type result struct {
	out catalogs.CommitOutcome
	err error
}

// goCommit runs fn in a goroutine and returns where its result arrives.
func goCommit(fn func() (catalogs.CommitOutcome, error)) chan result {
	ch := make(chan result, 1)
	go func() {
		o, err := fn()
		ch <- result{o, err}
	}()
	return ch
}

// recv waits for a commit's result, failing the test after a while
// instead of hanging it.
func recv(t *testing.T, ch chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("a commit never returned")
		return result{}
	}
}

// nextRound waits for the next round's report.
func nextRound(t *testing.T, rounds chan []string) []string {
	t.Helper()
	select {
	case r := <-rounds:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no round started")
		return nil
	}
}

// waitQueued waits until n commits are queued behind the running round.
func waitQueued(t *testing.T, p *Provider, id catalogs.TableIdent, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if p.groups.Pending(id.Key()) == n {
			return
		}
	}
	t.Fatalf("%d commits never queued", n)
}

// TestGroupCommitCancel: a commit whose caller gives up while it is queued
// is never committed; one whose round has started gets the round's
// outcome, which here is a landed commit.
func TestGroupCommitCancel(t *testing.T) {
	p, id, release, rounds := held(t)
	defer release()
	ctxA, cancelA := context.WithCancel(context.Background())
	a := goCommit(func() (catalogs.CommitOutcome, error) {
		return p.CommitOnce(ctxA, id, "a", []catalogs.WriteReceipt{stageIn(t, p, id, 0, 3)})
	})
	if got := nextRound(t, rounds); len(got) != 1 || got[0] != "a" {
		t.Fatalf("first round = %v", got)
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	rb := stageIn(t, p, id, 10, 4)
	b := goCommit(func() (catalogs.CommitOutcome, error) {
		return p.CommitOnce(ctxB, id, "b", []catalogs.WriteReceipt{rb})
	})
	c := goCommit(func() (catalogs.CommitOutcome, error) {
		return p.CommitOnce(context.Background(), id, "c", []catalogs.WriteReceipt{stageIn(t, p, id, 20, 5)})
	})
	waitQueued(t, p, id, 2)
	cancelB()
	if r := recv(t, b); r.err == nil || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled queued commit = %+v, %v; want a cancellation error", r.out, r.err)
	}
	cancelA() // a's round has started: a still gets its outcome
	release()
	if r := recv(t, a); r.err != nil || r.out.SnapshotID == 0 {
		t.Fatalf("commit a (cancelled after its round started) = %+v, %v; want it landed", r.out, r.err)
	}
	if r := recv(t, c); r.err != nil {
		t.Fatalf("commit c: %v", r.err)
	}
	if got := nextRound(t, rounds); len(got) != 1 || got[0] != "c" {
		t.Errorf("second round = %v, want [c] (b was removed)", got)
	}
	ctx := context.Background()
	if _, ok, err := p.FindCommit(ctx, id, "b"); ok || err != nil {
		t.Errorf("cancelled commit b: FindCommit = %v, %v; want not landed", ok, err)
	}
	for _, cid := range []string{"a", "c"} {
		if _, ok, err := p.FindCommit(ctx, id, cid); !ok || err != nil {
			t.Errorf("FindCommit(%s) = %v, %v", cid, ok, err)
		}
	}
	if err := p.Discard(ctx, id, []catalogs.WriteReceipt{rb}); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitOrderAndIsolation: appends queued behind a running round
// merge into one snapshot, a member with a receipt the table cannot take
// fails alone, an overwrite goes alone in queue order (the appends queued
// before it land before it, those after it after it), and a merged
// snapshot answers FindCommit with each member's own rows.
func TestGroupCommitOrderAndIsolation(t *testing.T) {
	p, id, release, rounds := held(t)
	defer release()
	ctx := context.Background()
	first := goCommit(func() (catalogs.CommitOutcome, error) {
		return p.CommitOnce(ctx, id, "first", []catalogs.WriteReceipt{stageIn(t, p, id, 0, 1)})
	})
	_ = nextRound(t, rounds)
	bad := stageIn(t, p, id, 100, 2)
	var rm receiptMeta
	if err := json.Unmarshal(bad.Metadata, &rm); err != nil {
		t.Fatal(err)
	}
	rm.SchemaID = 99 // a schema the table does not have
	bad.Metadata, _ = json.Marshal(rm)

	var chans []chan result
	submit := func(cid string, overwrite bool, r catalogs.WriteReceipt) {
		n := len(chans)
		chans = append(chans, goCommit(func() (catalogs.CommitOutcome, error) {
			if overwrite {
				return p.CommitOverwrite(ctx, id, cid, []catalogs.WriteReceipt{r})
			}
			return p.CommitOnce(ctx, id, cid, []catalogs.WriteReceipt{r})
		}))
		waitQueued(t, p, id, n+1) // keep the queue order
	}
	submit("a1", false, stageIn(t, p, id, 10, 2))
	submit("bad", false, bad)
	submit("a2", false, stageIn(t, p, id, 20, 3))
	submit("ow", true, stageIn(t, p, id, 30, 4))
	submit("a3", false, stageIn(t, p, id, 40, 5))
	release()
	if r := recv(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	res := map[string]result{}
	for i, cid := range []string{"a1", "bad", "a2", "ow", "a3"} {
		res[cid] = recv(t, chans[i])
	}
	for _, want := range [][]string{{"a1", "bad", "a2"}, {"ow"}, {"a3"}} {
		if got := nextRound(t, rounds); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round = %v, want %v", got, want)
		}
	}
	if r := res["bad"]; !errors.Is(r.err, catalogs.ErrInvalidArgument) {
		t.Errorf("bad member = %+v, %v; want ErrInvalidArgument", r.out, r.err)
	}
	for _, cid := range []string{"a1", "a2", "ow", "a3"} {
		if res[cid].err != nil {
			t.Fatalf("%s: %v", cid, res[cid].err)
		}
	}
	if res["a1"].out.SnapshotID != res["a2"].out.SnapshotID {
		t.Errorf("a1 and a2 landed in snapshots %d and %d, want one", res["a1"].out.SnapshotID, res["a2"].out.SnapshotID)
	}
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	order := map[int64]int{}
	for i, s := range tbl.Metadata().Snapshots() {
		order[s.SnapshotID] = i
	}
	if !(order[res["a2"].out.SnapshotID] < order[res["ow"].out.SnapshotID] && order[res["ow"].out.SnapshotID] < order[res["a3"].out.SnapshotID]) {
		t.Errorf("snapshot order %v: want a1+a2, then ow, then a3", order)
	}
	for cid, rows := range map[string]uint64{"a1": 2, "a2": 3, "ow": 4, "a3": 5} {
		rec, ok, err := p.FindCommit(ctx, id, cid)
		if err != nil || !ok || rec.RowCount != rows || rec.Outcome.SnapshotID != res[cid].out.SnapshotID {
			t.Errorf("FindCommit(%s) = %+v, %v, %v; want %d rows in snapshot %d", cid, rec, ok, err, rows, res[cid].out.SnapshotID)
		}
	}
	if _, ok, _ := p.FindCommit(ctx, id, "bad"); ok {
		t.Error("the failed member's id landed")
	}
	res2, err := p.Scan(ctx, id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Reader.Release()
	var n int64
	for res2.Reader.Next() {
		n += res2.Reader.RecordBatch().NumRows()
	}
	if n != 9 {
		t.Errorf("rows = %d, want 9 (the overwrite's 4, then a3's 5)", n)
	}
}

// TestGroupCommitAlreadyInTable: a plain Commit repeated with receipts the
// table already holds fails alone with ErrAlreadyExists; its round's
// other member lands.
func TestGroupCommitAlreadyInTable(t *testing.T) {
	p, id, release, rounds := held(t)
	ctx := context.Background()
	r := stageIn(t, p, id, 0, 2)
	release()
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
	nextRound(t, rounds)
	// Hold a round so that the next two commits queue behind it and merge.
	gate := make(chan struct{})
	p.groups.OnRound = func(batch []*member) {
		rounds <- []string{fmt.Sprint(len(batch))}
		<-gate
	}
	x := goCommit(func() (catalogs.CommitOutcome, error) {
		return p.Commit(ctx, id, []catalogs.WriteReceipt{stageIn(t, p, id, 5, 1)})
	})
	nextRound(t, rounds)
	ro := stageIn(t, p, id, 10, 3)
	again := goCommit(func() (catalogs.CommitOutcome, error) { return p.Commit(ctx, id, []catalogs.WriteReceipt{r}) })
	waitQueued(t, p, id, 1)
	other := goCommit(func() (catalogs.CommitOutcome, error) { return p.Commit(ctx, id, []catalogs.WriteReceipt{ro}) })
	waitQueued(t, p, id, 2)
	close(gate)
	if got := nextRound(t, rounds); got[0] != "2" {
		t.Errorf("round of %s members, want 2", got[0])
	}
	if res := recv(t, x); res.err != nil {
		t.Fatal(res.err)
	}
	if res := recv(t, again); !errors.Is(res.err, catalogs.ErrFailedPrecondition) {
		t.Errorf("repeated Commit = %+v, %v; want ErrFailedPrecondition", res.out, res.err)
	}
	if res := recv(t, other); res.err != nil {
		t.Errorf("other member: %v", res.err)
	}
}
