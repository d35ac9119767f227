package txn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// creator is a backend whose tables exist once CreateTable made them and
// whose commits fail when failCommit is set.
type creator struct {
	recorder
	mu         sync.Mutex
	tables     map[string]bool
	failCommit bool
}

func (c *creator) GetTableSpec(_ context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tables[t.Key()] {
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s", t)
	}
	return catalogs.TableSpec{}, nil
}

func (c *creator) CheckTableOptions(catalogs.TableIdent, *arrow.Schema, map[string]string) error {
	return nil
}

func (c *creator) CreateTable(_ context.Context, t catalogs.TableIdent, _ *arrow.Schema, _ map[string]string) (catalogs.TableSpec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables[t.Key()] {
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s", t)
	}
	if c.tables == nil {
		c.tables = map[string]bool{}
	}
	c.tables[t.Key()] = true
	return catalogs.TableSpec{}, nil
}

func (c *creator) DropTable(context.Context, catalogs.TableIdent) error { return nil }

func (c *creator) Commit(ctx context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if c.failCommit {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrConflict, "table %s: conflict", t)
	}
	return c.recorder.Commit(ctx, t, rs)
}

func (c *creator) exists(t catalogs.TableIdent) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tables[t.Key()]
}

// uncreator is a creator that drops a table no commit has landed on.
type uncreator struct{ creator }

func (u *uncreator) DropUnwritten(_ context.Context, t catalogs.TableIdent) (bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.tables, t.Key())
	return true, nil
}

type oneSource struct {
	recs []arrow.RecordBatch
	i    int
}

func (b *oneSource) Schema() *arrow.Schema          { return b.recs[0].Schema() }
func (b *oneSource) Next() bool                     { b.i++; return b.i <= len(b.recs) }
func (b *oneSource) RecordBatch() arrow.RecordBatch { return b.recs[b.i-1] }
func (b *oneSource) Err() error                     { return nil }

func oneBatch(t *testing.T) *oneSource {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	bld.Field(0).(*array.Int64Builder).Append(1)
	rec := bld.NewRecordBatch()
	t.Cleanup(rec.Release)
	return &oneSource{recs: []arrow.RecordBatch{rec}}
}

// TestFailedCreate: a create whose commit fails leaves no table on a
// backend that can drop it (catalogs.Uncreator), and keeps it, saying
// so, on one that cannot.
func TestFailedCreate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    interface {
			exists(catalogs.TableIdent) bool
		}
		wantTable bool
	}{
		{"uncreator", &uncreator{creator{failCommit: true}}, false},
		{"no uncreator", &creator{failCommit: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(time.Minute, nil)
			defer m.Close()
			tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}
			res, err := m.Write(context.Background(), Write{Table: tbl, Provider: tc.p.(catalogs.Provider), CreateIfMissing: true, IfExists: ExistsFail}, oneBatch(t))
			if !errors.Is(err, catalogs.ErrConflict) {
				t.Fatalf("err = %v, want the commit's conflict", err)
			}
			kept := strings.Contains(err.Error(), "created by this write and is kept")
			if got := tc.p.exists(tbl); got != tc.wantTable || kept != tc.wantTable || res.Created != tc.wantTable {
				t.Fatalf("table exists %v, error says kept %v, Result.Created %v; want %v (err: %v)", got, kept, res.Created, tc.wantTable, err)
			}
		})
	}
}

// TestRolledBackCreate: a table created inside a transaction is dropped
// at ROLLBACK, and kept at COMMIT.
func TestRolledBackCreate(t *testing.T) {
	for _, commit := range []bool{false, true} {
		m := NewManager(time.Minute, nil)
		p := &uncreator{creator{recorder: recorder{committed: map[string][]string{}}}}
		tx, err := m.Begin("o", "")
		if err != nil {
			t.Fatal(err)
		}
		tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}
		if _, err := m.Write(context.Background(), Write{Table: tbl, Provider: p, CreateIfMissing: true, IfExists: ExistsFail, Txn: tx}, oneBatch(t)); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = m.Commit(context.Background(), "o", tx.ID())
		} else {
			err = m.Rollback(context.Background(), "o", tx.ID())
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := p.exists(tbl); got != commit {
			t.Errorf("commit %v: table exists %v, want %v", commit, got, commit)
		}
		m.Close()
	}
}
