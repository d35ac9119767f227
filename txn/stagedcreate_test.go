package txn

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// stager is a creator whose creates are staged: a table exists once
// CommitCreate published it with the receipts of its create streams.
type stager struct {
	creator
	// published are the receipts each CommitCreate published, by table.
	published map[string][]string
	// createdOnOpen makes another writer create the table while the
	// create streams (a lost race).
	createdOnOpen bool
}

// StagesCreate stages every create but those with the option "unstaged"
// (as a backend declines one whose table it cannot fix in advance).
func (s *stager) StagesCreate(opts map[string]string) bool { return opts["unstaged"] == "" }

func (s *stager) OpenCreateStream(_ context.Context, t catalogs.TableIdent, _ *arrow.Schema, _ map[string]string, _ catalogs.WriteTxn) (catalogs.WriteStream, error) {
	if s.createdOnOpen {
		s.mu.Lock()
		s.tables[t.Key()] = true
		s.mu.Unlock()
	}
	return &batchStream{p: s, table: t}, nil
}

func (s *stager) WriteBatch(_ context.Context, _ catalogs.TableIdent, b arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	return rc("rows-" + time.Now().Format("150405.000000000")), nil
}

func (s *stager) CommitCreate(_ context.Context, t catalogs.TableIdent, _ *arrow.Schema, _ map[string]string, _ string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.failCommit:
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrConflict, "table %s: conflict", t)
	case s.tables[t.Key()]:
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	}
	s.tables[t.Key()] = true
	for _, r := range rs {
		s.published[t.Name] = append(s.published[t.Name], string(r.Metadata))
	}
	return catalogs.CommitOutcome{SnapshotID: 1, CommittedAt: time.Now()}, nil
}

func newStager() *stager {
	return &stager{creator: creator{recorder: recorder{committed: map[string][]string{}}, tables: map[string]bool{}},
		published: map[string][]string{}}
}

// TestStagedCreate: on a catalogs.StagedCreator a create that fails
// leaves no table (and says nothing of a kept one) and its retry
// succeeds; a transaction's create, with a second write into it, appears
// at COMMIT with both writes and not at ROLLBACK; a create_append whose
// table another writer created meanwhile appends; Prepare publishes the
// create first.
func TestStagedCreate(t *testing.T) {
	ctx := context.Background()
	tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}
	m := NewManager(time.Minute, nil)
	defer m.Close()

	t.Run("failed", func(t *testing.T) {
		p := newStager()
		p.failCommit = true
		res, err := m.Write(ctx, Write{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsFail}, oneBatch(t))
		if !errors.Is(err, catalogs.ErrConflict) || strings.Contains(err.Error(), "kept") {
			t.Fatalf("err = %v, want the commit's conflict, no table kept", err)
		}
		if p.exists(tbl) || res.Created || len(p.discarded) != 1 {
			t.Fatalf("table exists %v, Created %v, discarded %v; want no table and the receipt discarded", p.exists(tbl), res.Created, p.discarded)
		}
		p.failCommit = false
		if res, err := m.Write(ctx, Write{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsFail}, oneBatch(t)); err != nil || !res.Created || !p.exists(tbl) {
			t.Fatalf("retry: %+v %v", res, err)
		}
	})
	for _, commit := range []bool{true, false} {
		name := map[bool]string{true: "commit", false: "rollback"}[commit]
		t.Run(name, func(t *testing.T) {
			p := newStager()
			tx, err := m.Begin("o", "")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []Write{
				{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsFail, Txn: tx},
				{Table: tbl, Provider: p, Txn: tx},
			} {
				if _, err := m.Write(ctx, w, oneBatch(t)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.Write(ctx, Write{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsFail, Txn: tx}, oneBatch(t)); !errors.Is(err, catalogs.ErrAlreadyExists) {
				t.Errorf("second create in the transaction: %v, want AlreadyExists", err)
			}
			if p.exists(tbl) {
				t.Fatal("the table exists before the transaction ends")
			}
			if commit {
				err = m.Commit(ctx, "o", tx.ID())
			} else {
				err = m.Rollback(ctx, "o", tx.ID())
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.exists(tbl) != commit {
				t.Fatalf("table exists %v after %s", p.exists(tbl), name)
			}
			if got := len(p.published[tbl.Name]) + len(p.discarded); got != 2 || (commit && len(p.published[tbl.Name]) != 2) {
				t.Fatalf("published %v, discarded %v; want both writes' receipts %sed", p.published, p.discarded, map[bool]string{true: "publish", false: "discard"}[commit])
			}
		})
	}
	t.Run("create_append race", func(t *testing.T) {
		p := newStager()
		p.createdOnOpen = true
		res, err := m.Write(ctx, Write{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsAppend}, oneBatch(t))
		if err != nil || res.Created || len(p.committed[tbl.Name]) != 1 {
			t.Fatalf("%+v %v, committed %v; want an append of the receipt", res, err, p.committed)
		}
	})
	t.Run("prepare", func(t *testing.T) {
		p := newStager()
		tx, err := m.Begin("o", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Write(ctx, Write{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsFail, Txn: tx}, oneBatch(t)); err != nil {
			t.Fatal(err)
		}
		out, err := m.Prepare(ctx, "o", tx.ID(), nil)
		if err != nil || len(out) != 1 || len(out[0].Receipts) != 1 {
			t.Fatalf("Prepare: %v %v", out, err)
		}
		if !p.exists(tbl) || len(p.published[tbl.Name]) != 0 {
			t.Fatalf("after Prepare: table exists %v, published %v; want it created empty", p.exists(tbl), p.published)
		}
	})
}

// keepingStager is a stager whose creates leave marks
// (catalogs.CreateKeeper): it records each KeepCreate.
type keepingStager struct {
	*stager
	kept chan []catalogs.WriteReceipt
}

func (k keepingStager) KeepCreate(_ context.Context, _ catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	select {
	case k.kept <- rs:
	default:
	}
	return nil
}

// TestKeepCreates: while a transaction holds a staged create's receipts
// the reaper refreshes their marks (KeepCreate) every keep interval, so
// that no replica's reclaimer takes the create's files for a killed
// create's however long the transaction lives; once it commits, they are
// no longer refreshed.
func TestKeepCreates(t *testing.T) {
	ctx := context.Background()
	tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}
	m := NewManager(time.Minute, nil, WithKeepEvery(20*time.Millisecond))
	defer m.Close()
	p := keepingStager{stager: newStager(), kept: make(chan []catalogs.WriteReceipt, 1)}
	tx, err := m.Begin("o", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write(ctx, Write{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsFail, Txn: tx}, oneBatch(t)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case rs := <-p.kept:
			if len(rs) != 1 {
				t.Fatalf("KeepCreate of %d receipts, want the create's 1", len(rs))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the marks of the transaction's staged create were not refreshed")
		}
	}
	if err := m.Commit(ctx, "o", tx.ID()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case <-p.kept: // a round under way when the commit landed
	default:
	}
	select {
	case <-p.kept:
		t.Fatal("KeepCreate after the create's commit")
	case <-time.After(100 * time.Millisecond):
	}
}
