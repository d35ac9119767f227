package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/txn"
)

// gatewayFloors is the request txn.Manager.Maintain makes with the
// default TTL: the floors the tests below put the expiry under.
func gatewayFloors(tasks ...string) catalogs.MaintainRequest {
	return catalogs.MaintainRequest{Tasks: tasks, ReplayWindow: txn.DefaultMessageTTL + 2*txn.MaxClockSkew,
		Replayable: txn.Replayable, CommitWindow: 30*time.Second + txn.MaxClockSkew}
}

// twoReplicas opens two providers on one embedded catalog (two gateway
// replicas sharing a lake) and creates a table on it whose snapshots
// all may expire by age (history.expire.max-snapshot-age-ms 1).
func twoReplicas(t *testing.T, name string) (a, b *Provider, id catalogs.TableIdent) {
	t.Helper()
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
	a, b = open(), open()
	id = catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: name}
	if _, err := a.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := a.cat.LoadTable(ctx, table.Identifier{"default", name})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(ice.Properties{table.MaxSnapshotAgeMsKey: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b, id
}

// TestExpiryFloorsKeepWhatAWriterMayLookUp: under the gateway's floors an
// expiry on replica A removes, however young, the snapshots A's own
// auto-commit writes made once they answered, and keeps every snapshot a
// writer may still look its commit id up in: a commit message's and an
// idempotency key's (a client may send them again), one whose commit
// answered A's writer an error (its landed-commit check follows), and
// any replica B wrote (nothing on A tells when B's commit answered). The
// commit message's replay on B answers its snapshot.
func TestExpiryFloorsKeepWhatAWriterMayLookUp(t *testing.T) {
	ctx := context.Background()
	a, b, id := twoReplicas(t, "floors")
	snaps := map[string]int64{}
	commit := func(p *Provider, commitID string, from int64) catalogs.WriteReceipt {
		t.Helper()
		r := stageIn(t, p, id, from, 10)
		out, err := p.CommitOnce(ctx, id, commitID, []catalogs.WriteReceipt{r})
		if err != nil {
			t.Fatalf("commit %s: %v", commitID, err)
		}
		snaps[commitID] = out.SnapshotID
		return r
	}
	commit(a, "write-a1", 0)
	commit(a, "write-a2", 10)
	commit(b, "write-b1", 20)
	msg := commit(a, "msg-job-1", 30)
	commit(a, txn.IdempotencyCommitID("", "alice", "key-1"), 40)
	commit(a, "write-a3", 50)
	// write-a3's commit answered its writer an error (the reply was lost):
	// the writer looks the id up next.
	a.unsettled.begin("write-a3")
	a.unsettled.end("write-a3", errors.New("reply lost"))
	commit(a, "write-a4", 60) // the current snapshot
	time.Sleep(5 * time.Millisecond)

	rep, err := a.Maintain(ctx, id, gatewayFloors(catalogs.TaskExpireSnapshots))
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{snaps["write-a1"], snaps["write-a2"]}
	slices.Sort(want)
	if tr := rep.Tasks[0]; !tr.Committed || !slices.Equal(tr.ExpiredSnapshots, want) || tr.RetainedSnapshots != 5 {
		t.Errorf("expiry = %+v, want exactly A's answered auto-commits %v expired, 5 retained", tr, want)
	}
	if n := scanCount(t, a, id); n != 70 {
		t.Errorf("rows after expiry = %d, want 70", n)
	}
	rec, landed, same, err := b.MatchCommit(ctx, id, "msg-job-1", []catalogs.WriteReceipt{msg})
	if err != nil || !landed || !same || rec.Outcome.SnapshotID != snaps["msg-job-1"] {
		t.Errorf("replay of msg-job-1 on B = %+v landed %v same %v, %v; want its snapshot %d", rec, landed, same, err, snaps["msg-job-1"])
	}
}

// TestOutstandingPayloadCommitsAfterExpiry: replica B holds a prepared
// payload (staged files, no snapshot) while replica A writes, compacts
// and expires the table down to its current snapshot; B's payload still
// commits (through A, as a coordinator may send it to any replica), every
// row once. Compacted and expired again, the payload's
// commit message stays answerable: repeated under its id it answers its
// snapshot and adds nothing, under another id it is refused as
// referenced, and its files stay on storage.
func TestOutstandingPayloadCommitsAfterExpiry(t *testing.T) {
	ctx := context.Background()
	a, b, id := twoReplicas(t, "payload")
	payload := []catalogs.WriteReceipt{stageIn(t, b, id, 1000, 10)}
	// A's writes commit as the gateway's auto-commit writes do.
	write := func(from int64) {
		t.Helper()
		r := stageIn(t, a, id, from, 10)
		if _, err := a.CommitOnce(ctx, id, fmt.Sprintf("write-%d", from), []catalogs.WriteReceipt{r}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(8) {
		write(i * 10)
	}
	maintain := func(round int) {
		t.Helper()
		time.Sleep(5 * time.Millisecond)
		rep, err := a.Maintain(ctx, id, gatewayFloors(catalogs.TaskRewriteDataFiles, catalogs.TaskExpireSnapshots))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !rep.Tasks[0].Committed || !rep.Tasks[1].Committed || len(rep.Tasks[1].ExpiredSnapshots) == 0 {
			t.Fatalf("round %d: maintenance = %+v, want a rewrite and an expiry landed", round, rep)
		}
	}
	maintain(1)
	for _, f := range receiptFiles(t, id, payload[0]) {
		if !exists(f) {
			t.Fatalf("the outstanding payload's file %s was deleted", f)
		}
	}
	// The coordinator sends it to A: its snapshot is A's own, and only
	// the replay window keeps it.
	out, err := a.CommitOnce(ctx, id, "msg-job-2", payload)
	if err != nil {
		t.Fatalf("the outstanding payload after expiry: %v", err)
	}
	for i := range int64(5) {
		write(100 + i*10)
	}
	maintain(2)
	for _, f := range receiptFiles(t, id, payload[0]) {
		if !exists(f) {
			t.Errorf("the committed payload's file %s was deleted within the replay window", f)
		}
	}
	for i, p := range []*Provider{a, b} {
		again, err := p.CommitOnce(ctx, id, "msg-job-2", payload)
		if err != nil || again.SnapshotID != out.SnapshotID || again.Duplicate {
			t.Errorf("replica %d: the payload repeated under its id = %+v, %v; want its snapshot %d", i, again, err, out.SnapshotID)
		}
	}
	if err := a.CheckUnreferenced(ctx, id, payload); catalogs.Kind(err) != catalogs.ErrFailedPrecondition {
		t.Errorf("the payload under another id: %v, want FailedPrecondition (referenced)", err)
	}
	if n, want := scanCount(t, a, id), int64(8*10+10+5*10); n != want {
		t.Errorf("rows = %d, want %d (every row once)", n, want)
	}
}

// TestExpiryFloorsForgedWriter: the trust boundary of flightgw.writer
// (docs/maintenance.md). The writer id is no secret (every snapshot
// summary shows it), so another engine may write A's id into its own
// snapshots. A then takes them for its own answered commits and expires
// them without the commit window's wait: the one writer that may lose a
// lookup is the forger, whose snapshot that was. The floors that protect
// anyone else do not read the claim: a commit id a client may send again
// keeps its snapshot, a commit of A's whose answer was an error keeps its
// snapshot, and a writer that names itself (B before the forgery) keeps
// the commit window's.
func TestExpiryFloorsForgedWriter(t *testing.T) {
	ctx := context.Background()
	a, b, id := twoReplicas(t, "forged")
	snaps := map[string]int64{}
	commit := func(p *Provider, commitID string, from int64) {
		t.Helper()
		out, err := p.CommitOnce(ctx, id, commitID, []catalogs.WriteReceipt{stageIn(t, p, id, from, 10)})
		if err != nil {
			t.Fatalf("commit %s: %v", commitID, err)
		}
		snaps[commitID] = out.SnapshotID
	}
	commit(a, "write-a1", 0)
	commit(b, "write-b1", 10) // B as itself
	commit(a, "write-a2", 20)
	a.unsettled.begin("write-a2")
	a.unsettled.end("write-a2", errors.New("reply lost")) // A's writer looks it up next
	b.writer = a.writer                                   // from here B claims A's id
	commit(b, "write-forged", 30)
	commit(b, "msg-forged", 40) // a commit message's id: its client may send it again
	commit(a, "write-a3", 50)   // the current snapshot
	time.Sleep(5 * time.Millisecond)

	rep, err := a.Maintain(ctx, id, gatewayFloors(catalogs.TaskExpireSnapshots))
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{snaps["write-a1"], snaps["write-forged"]}
	slices.Sort(want)
	if tr := rep.Tasks[0]; !tr.Committed || !slices.Equal(tr.ExpiredSnapshots, want) || tr.RetainedSnapshots != 4 {
		t.Errorf("expiry = %+v, want exactly A's answered write-a1 and the forged write-forged %v expired, 4 retained", tr, want)
	}
	for _, c := range []string{"write-b1", "write-a2", "msg-forged"} {
		if _, found, err := a.FindCommit(ctx, id, c); err != nil || !found {
			t.Errorf("commit %s after the expiry: found %v, %v; want its snapshot kept", c, found, err)
		}
	}
	if n := scanCount(t, a, id); n != 60 {
		t.Errorf("rows after expiry = %d, want 60", n)
	}
}
