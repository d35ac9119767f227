package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestReplicasCommitTablesAFileOnce: the multi-table commit keeps the
// same rule. Two replicas (two providers on one catalog, each with the
// test's CommitTransaction) commit the same receipts for two tables under
// two commit ids at the same instant: one lands and the other is
// ErrFailedPrecondition naming the file and the snapshot that added it,
// as is a later commit of those receipts under a third id, and each table
// keeps one snapshot.
func TestReplicasCommitTablesAFileOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() restProvider {
		p, err := OpenEmbedded(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		p.cat = fakeTxn{p.cat}
		r, ok := p.capabilities().(restProvider)
		if !ok {
			t.Fatalf("a catalog with CommitTransaction gives %T", p.capabilities())
		}
		return r
	}
	reps := []restProvider{open(), open()}
	refused := func(err error) bool {
		return errors.Is(err, catalogs.ErrFailedPrecondition) && strings.Contains(err.Error(), "already in snapshot")
	}
	for trial := range 3 {
		var commits []catalogs.TableCommit
		for _, name := range []string{"a", "b"} {
			id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: fmt.Sprintf("multi%s%d", name, trial)}
			if _, err := reps[0].CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
				t.Fatal(err)
			}
			commits = append(commits, catalogs.TableCommit{Table: id, Receipts: []catalogs.WriteReceipt{stageIn(t, reps[0].Provider, id, 0, 10)}})
		}
		var start sync.WaitGroup
		start.Add(1)
		errs := make([]chan error, 2)
		for i, r := range reps {
			errs[i] = make(chan error, 1)
			go func() {
				start.Wait()
				_, err := r.CommitTables(ctx, fmt.Sprintf("job-%d", i), commits)
				errs[i] <- err
			}()
		}
		start.Done()
		landed := 0
		for i := range errs {
			select {
			case err := <-errs[i]:
				switch {
				case err == nil:
					landed++
				case !refused(err):
					t.Errorf("trial %d: replica %d: %v; want ErrFailedPrecondition (the file is in a snapshot)", trial, i, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("a commit never returned")
			}
		}
		if landed != 1 {
			t.Fatalf("trial %d: %d commits landed, want exactly one", trial, landed)
		}
		if _, err := reps[1].CommitTables(ctx, "job-later", commits); !refused(err) {
			t.Errorf("trial %d: the landed receipts under a third id: %v; want ErrFailedPrecondition (the file is in a snapshot)", trial, err)
		}
		for _, c := range commits {
			tbl, err := reps[0].load(ctx, c.Table)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(tbl.Metadata().Snapshots()); n != 1 {
				t.Errorf("trial %d: table %s: %d snapshots, want 1", trial, c.Table, n)
			}
		}
	}
}

// TestReplicaCommitAfterOverwriteAFileOnce: while replica a's commit is
// in flight, replica b commits the same receipts under another id and
// then overwrites the table. a's attempt loses the race, and its retry
// finds its file in b's append (no longer in the current snapshot): it is
// ErrFailedPrecondition naming that snapshot, and the table holds b's
// overwrite alone, not the overwritten rows again.
func TestReplicaCommitAfterOverwriteAFileOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var reps []*Provider
	for range 2 {
		p, err := OpenEmbedded(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		reps = append(reps, p)
	}
	a, b := reps[0], reps[1]
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "overwritten"}
	if _, err := a.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	rs := []catalogs.WriteReceipt{stageIn(t, a, id, 0, 10)}
	over := []catalogs.WriteReceipt{stageIn(t, b, id, 100, 5)}
	var appended int64
	a.cat = &racingCatalog{Catalog: a.cat, before: func() {
		out, err := b.CommitOnce(ctx, id, "b-append", rs)
		if err != nil {
			t.Errorf("replica b's append: %v", err)
		}
		appended = out.SnapshotID
		if _, err := b.CommitOverwrite(ctx, id, "b-overwrite", over); err != nil {
			t.Errorf("replica b's overwrite: %v", err)
		}
	}}
	_, err := a.CommitOnce(ctx, id, "a-append", rs)
	if want := fmt.Sprintf("already in snapshot %d", appended); !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), want) {
		t.Errorf("replica a's commit after b's append and overwrite: %v; want ErrFailedPrecondition (%s)", err, want)
	}
	if got := scanAll(t, a, id, catalogs.ScanRequest{}).rows; got != 5 {
		t.Errorf("the table holds %d rows, want the overwrite's 5", got)
	}
}
