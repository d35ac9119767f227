package txn

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// observed records what a Manager reported.
type observed struct {
	mu          sync.Mutex
	rows, bytes int64
	commits     []error
	retried     uint32
}

func (o *observed) Wrote(_ catalogs.TableIdent, rows, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rows += rows
	o.bytes += bytes
}

func (o *observed) Committed(_ catalogs.TableIdent, out catalogs.CommitOutcome, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commits = append(o.commits, err)
	o.retried += out.Retried
}

// batches is a Source of int64 batches.
type batches struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	i      int
}

func int64Batches(sizes ...int) *batches {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := &batches{schema: schema, i: -1}
	for _, n := range sizes {
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		for j := range n {
			ib.Append(int64(j))
		}
		arr := ib.NewArray()
		ib.Release()
		b.recs = append(b.recs, array.NewRecordBatch(schema, []arrow.Array{arr}, int64(n)))
		arr.Release()
	}
	return b
}

func (b *batches) Schema() *arrow.Schema          { return b.schema }
func (b *batches) Next() bool                     { b.i++; return b.i < len(b.recs) }
func (b *batches) RecordBatch() arrow.RecordBatch { return b.recs[b.i] }
func (b *batches) Err() error                     { return nil }

func TestObserverSeesWritesAndCommits(t *testing.T) {
	obs := &observed{}
	m := NewManager(0, nil, WithObserver(obs))
	defer m.Close()
	r := &recorder{committed: map[string][]string{}}
	ctx := context.Background()

	// Auto-commit: one write, one commit.
	if _, err := m.Write(ctx, Write{Table: tbl("a"), Provider: r}, int64Batches(3, 4)); err != nil {
		t.Fatal(err)
	}
	if obs.rows != 7 || obs.bytes < 7*8 || len(obs.commits) != 1 || obs.commits[0] != nil {
		t.Fatalf("after an auto-commit write: rows %d bytes %d commits %v", obs.rows, obs.bytes, obs.commits)
	}

	// In a transaction: the write is reported at once, its commit at COMMIT.
	tx, err := m.Begin("p", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write(ctx, Write{Table: tbl("b"), Provider: r, Txn: tx}, int64Batches(5)); err != nil {
		t.Fatal(err)
	}
	if obs.rows != 12 || len(obs.commits) != 1 {
		t.Fatalf("after a write in a transaction: rows %d commits %v", obs.rows, obs.commits)
	}
	if err := m.Commit(ctx, "p", tx.ID()); err != nil {
		t.Fatal(err)
	}
	if len(obs.commits) != 2 || obs.commits[1] != nil {
		t.Fatalf("after COMMIT: commits %v", obs.commits)
	}

	// A failed commit is reported with its error and the rows are not.
	r.failOn = "c"
	if _, err := m.Write(ctx, Write{Table: tbl("c"), Provider: r}, int64Batches(2)); err == nil {
		t.Fatal("write into c succeeded")
	}
	if obs.rows != 12 || len(obs.commits) != 3 || catalogs.Kind(obs.commits[2]) != catalogs.ErrConflict {
		t.Fatalf("after a failed commit: rows %d commits %v", obs.rows, obs.commits)
	}
}
