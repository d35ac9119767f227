package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// stagedCreator returns the instance's StagedCreator, skipping t when
// the backend is none or does not stage a plain create.
func stagedCreator(t *testing.T, in *Instance) catalogs.StagedCreator {
	t.Helper()
	sc, ok := in.Provider.(catalogs.StagedCreator)
	skipUnless(t, ok, "catalogs.StagedCreator")
	if !sc.StagesCreate(nil) {
		t.Skip("the backend does not stage a create without table options (StagesCreate(nil) is false)")
	}
	return sc
}

// StageCreate opens a create stream of id (as it will be created from
// schema and opts) in the unit of work commitID and writes rows [from,
// from+n) of Batch; it returns the stream's receipts. Backend tests of
// what is their own in a staged create use it too.
func StageCreate(t *testing.T, sc catalogs.StagedCreator, id catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, commitID string, from, n int64) []catalogs.WriteReceipt {
	t.Helper()
	ctx := context.Background()
	ws, err := sc.OpenCreateStream(ctx, id, schema, opts, catalogs.WriteTxn{ID: commitID, CommitID: commitID})
	if err != nil {
		t.Fatalf("OpenCreateStream(%s): %v", id, err)
	}
	b := Batch(from, n)
	defer b.Release()
	if err := ws.Write(ctx, b); err != nil {
		t.Fatalf("Write to the create stream of %s: %v", id, err)
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		t.Fatalf("Close of the create stream of %s: %v", id, err)
	}
	return rs
}

// stageCreate is StageCreate of Schema without options.
func stageCreate(t *testing.T, sc catalogs.StagedCreator, id catalogs.TableIdent, commitID string, from, n int64) []catalogs.WriteReceipt {
	t.Helper()
	return StageCreate(t, sc, id, Schema, nil, commitID, from, n)
}

// wantNoTable checks that id is not found and not listed.
func wantNoTable(t *testing.T, in *Instance, id catalogs.TableIdent, when string) {
	t.Helper()
	ctx := context.Background()
	if _, err := in.Provider.GetTableSpec(ctx, id); !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("GetTableSpec(%s) %s: %v, want NotFound", id, when, err)
	}
	if l, ok := in.Provider.(catalogs.Lister); ok {
		ts, err := l.ListTables(ctx, in.Namespace)
		if err != nil {
			t.Fatalf("ListTables %s: %v", when, err)
		}
		if slices.ContainsFunc(ts, func(x catalogs.TableIdent) bool { return x.Key() == id.Key() }) {
			t.Errorf("ListTables %s lists %s", when, id)
		}
	}
}

// testStagedCreate: a staged create's table is invisible (not found, not
// listed) until CommitCreate, which publishes it with the receipts' rows;
// repeated under its commit id it answers the same outcome. Of creates of
// one name racing, exactly one lands and the others are AlreadyExists;
// their receipts, discarded, leave no file behind, as a discarded create
// leaves nothing and lets the name be created again. An empty create is a
// table without rows.
func (s suite) testStagedCreate(t *testing.T) {
	in := s.h.New(t)
	sc := stagedCreator(t, in)
	ctx := context.Background()
	table := func(name string) catalogs.TableIdent {
		return catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: name}
	}

	// Discarded: nothing left, and the name is free.
	gone := table("create_discarded")
	before := s.files(t, in)
	rs := stageCreate(t, sc, gone, "c-gone", 0, 3)
	if s.cfg.StagesFiles && len(added(before, s.files(t, in))) == 0 {
		t.Fatal("a create stream staged no file")
	}
	wantNoTable(t, in, gone, "before its commit")
	discard(t, in, gone, rs)
	s.sameFiles(t, in, "Discard of a staged create's receipts", before)
	wantNoTable(t, in, gone, "after its receipts were discarded")
	if _, err := sc.CommitCreate(ctx, gone, Schema, nil, "c-gone-again", stageCreate(t, sc, gone, "c-gone-again", 0, 2)); err != nil {
		t.Fatalf("CommitCreate of the name a discarded create left free: %v", err)
	}
	if n := rows(t, in, gone); n != 2 {
		t.Errorf("rows of the table created again = %d, want 2", n)
	}

	// Racing: one wins, the others lose, and their files go.
	raced := table("create_raced")
	n := s.h.Committers
	receipts := make([][]catalogs.WriteReceipt, n)
	staged := make([][]string, n)
	for i := range n {
		was := s.files(t, in)
		receipts[i] = stageCreate(t, sc, raced, fmt.Sprintf("c-race-%d", i), int64(100*i), int64(i+1))
		staged[i] = added(was, s.files(t, in))
	}
	wantNoTable(t, in, raced, "before any create's commit")
	errs := make([]error, n)
	outs := make([]catalogs.CommitOutcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = sc.CommitCreate(ctx, raced, Schema, nil, fmt.Sprintf("c-race-%d", i), receipts[i])
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("racing creates %d and %d both landed", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, catalogs.ErrAlreadyExists):
			t.Errorf("racing create %d: %v, want AlreadyExists", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no racing create landed")
	}
	if got := rows(t, in, raced); got != int64(won+1) {
		t.Errorf("rows after the race = %d, want the winner's %d", got, won+1)
	}
	again, err := sc.CommitCreate(ctx, raced, Schema, nil, fmt.Sprintf("c-race-%d", won), receipts[won])
	if err != nil {
		t.Errorf("the winner's CommitCreate repeated: %v, want its outcome", err)
	} else if s.cfg.Snapshots && again.SnapshotID != outs[won].SnapshotID {
		t.Errorf("the winner's CommitCreate repeated: snapshot %d, want %d", again.SnapshotID, outs[won].SnapshotID)
	}
	if got := rows(t, in, raced); got != int64(won+1) {
		t.Errorf("rows after the winner's create repeated = %d, want %d", got, won+1)
	}
	left := s.files(t, in)
	for i := range n {
		if i == won {
			continue
		}
		discard(t, in, raced, receipts[i])
		if s.cfg.StagesFiles {
			left = s.files(t, in)
		}
		for _, f := range staged[i] {
			if slices.Contains(left, f) {
				t.Errorf("the losing create %d's file %s is left after Discard of its receipts", i, f)
			}
		}
	}

	// Empty.
	empty := table("create_empty")
	if _, err := sc.CommitCreate(ctx, empty, Schema, nil, "c-empty", nil); err != nil {
		t.Fatalf("CommitCreate of an empty table: %v", err)
	}
	if spec, err := in.Provider.GetTableSpec(ctx, empty); err != nil {
		t.Errorf("GetTableSpec of the empty table: %v", err)
	} else if spec.Schema.NumFields() != Schema.NumFields() {
		t.Errorf("the empty table's schema %v, want %v", spec.Schema, Schema)
	}
	if got := rows(t, in, empty); got != 0 {
		t.Errorf("rows of the empty table = %d, want 0", got)
	}
}

// testStagedCreateReclaim: the files of a create killed before its commit
// (receipts never committed nor discarded), which belong to no table, are
// reclaimed once older than MinAge; those of a create still in flight are
// not: one whose unit of work refreshes its marks (catalogs.CreateKeeper,
// as a transaction on another replica does), however old its files, and
// one a live unit of work of this process holds (ReclaimOptions.Held). A
// dry run deletes nothing. The in-flight creates commit afterwards, and
// the killed create's name can be created again.
func (s suite) testStagedCreateReclaim(t *testing.T) {
	in := s.h.New(t)
	sc := stagedCreator(t, in)
	rc, ok := in.Provider.(catalogs.Reclaimer)
	skipUnless(t, ok, "catalogs.Reclaimer")
	ck, ok := in.Provider.(catalogs.CreateKeeper)
	skipUnless(t, ok, "catalogs.CreateKeeper")
	if !s.cfg.StagesFiles {
		t.Fatal("the backend stages creates and reclaims files but does not declare Config.StagesFiles: the suite cannot see what it deletes")
	}
	ctx := context.Background()
	table := func(name string) catalogs.TableIdent {
		return catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: name}
	}
	killed, kept, held := table("create_killed"), table("create_kept"), table("create_held")
	stage := func(id catalogs.TableIdent, from, n int64) ([]catalogs.WriteReceipt, []string) {
		was := s.files(t, in)
		rs := stageCreate(t, sc, id, "c-"+id.Name, from, n)
		files := added(was, s.files(t, in))
		if len(files) == 0 {
			t.Fatalf("the create stream of %s staged no file", id)
		}
		return rs, files
	}
	_, killedFiles := stage(killed, 0, 5)
	keptRs, keptFiles := stage(kept, 10, 6)
	heldRs, heldFiles := stage(held, 20, 7)
	holds := func(_ context.Context, tbl catalogs.TableIdent) []catalogs.WriteReceipt {
		if tbl.Key() == held.Key() {
			return heldRs
		}
		return nil
	}
	// A listing may show a time up to ModTimeGranularity older than it
	// is: the refreshed marks must still be younger than minAge.
	minAge := max(50*time.Millisecond, 3*s.cfg.ModTimeGranularity)
	time.Sleep(minAge + 50*time.Millisecond)
	// Every file is older than minAge now; the kept create's unit of work
	// refreshes its marks, as it does while it lives.
	if err := ck.KeepCreate(ctx, kept, keptRs); err != nil {
		t.Fatalf("KeepCreate: %v", err)
	}
	all := s.files(t, in)

	rep, err := rc.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour, Held: holds})
	if err != nil {
		t.Fatalf("Reclaim(MinAge 1h): %v", err)
	}
	s.sameFiles(t, in, "Reclaim of staged creates younger than MinAge", all)
	if rep.Files() != 0 || rep.Creates != 0 {
		t.Errorf("Reclaim(MinAge 1h) reports %d files of %d creates, want none", rep.Files(), rep.Creates)
	}

	rep, err = rc.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: minAge, DryRun: true, Held: holds})
	if err != nil {
		t.Fatalf("Reclaim(dry run): %v", err)
	}
	s.sameFiles(t, in, "a dry-run Reclaim", all)
	for _, f := range killedFiles {
		if !slices.ContainsFunc(rep.Orphans, func(o string) bool { return path.Base(o) == path.Base(f) }) {
			t.Errorf("dry-run Reclaim orphans %v do not name the killed create's file %s", rep.Orphans, f)
		}
	}

	// Refreshed again: under load the two reclaims above can outlast
	// minAge, which a live unit of work would have refreshed across.
	if err := ck.KeepCreate(ctx, kept, keptRs); err != nil {
		t.Fatalf("KeepCreate: %v", err)
	}
	rep, err = rc.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: minAge, Held: holds})
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	left := s.files(t, in)
	for _, f := range killedFiles {
		if slices.Contains(left, f) {
			t.Errorf("Reclaim kept %s, a file of a create killed before its commit", f)
		}
	}
	for _, f := range append(slices.Clone(keptFiles), heldFiles...) {
		if !slices.Contains(left, f) {
			t.Errorf("Reclaim deleted %s, a file of a create in flight", f)
		}
	}
	if rep.Creates != 1 {
		t.Errorf("Reclaim reports %d staged creates reclaimed, want 1", rep.Creates)
	}
	if deleted := len(all) - len(left); rep.Files() != deleted {
		t.Errorf("Reclaim reports %d files deleted, %d were", rep.Files(), deleted)
	}
	wantNoTable(t, in, killed, "after its staged files were reclaimed")

	if _, err := sc.CommitCreate(ctx, kept, Schema, nil, "c-"+kept.Name, keptRs); err != nil {
		t.Fatalf("CommitCreate of the kept create after Reclaim: %v", err)
	}
	if _, err := sc.CommitCreate(ctx, held, Schema, nil, "c-"+held.Name, heldRs); err != nil {
		t.Fatalf("CommitCreate of the held create after Reclaim: %v", err)
	}
	if n := rows(t, in, kept); n != 6 {
		t.Errorf("rows of the kept create = %d, want 6", n)
	}
	if n := rows(t, in, held); n != 7 {
		t.Errorf("rows of the held create = %d, want 7", n)
	}
	if _, err := sc.CommitCreate(ctx, killed, Schema, nil, "c-again", stageCreate(t, sc, killed, "c-again", 0, 1)); err != nil {
		t.Fatalf("CommitCreate of the killed create's name: %v", err)
	}
	if n := rows(t, in, killed); n != 1 {
		t.Errorf("rows of the table created in the killed create's name = %d, want 1", n)
	}
}
