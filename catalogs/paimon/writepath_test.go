package paimon_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/txn"
)

// batchSource is a txn.Source over fixed batches.
type batchSource struct {
	schema *arrow.Schema
	bs     []arrow.RecordBatch
	cur    arrow.RecordBatch
}

func (s *batchSource) Schema() *arrow.Schema { return s.schema }
func (s *batchSource) Next() bool {
	if len(s.bs) == 0 {
		return false
	}
	s.cur, s.bs = s.bs[0], s.bs[1:]
	return true
}
func (s *batchSource) RecordBatch() arrow.RecordBatch { return s.cur }
func (s *batchSource) Err() error                     { return nil }

// TestWritePathTableOptions: the one write path creates a Paimon table
// with the write's table options (fixed buckets, primary key) and commits
// into it.
func TestWritePathTableOptions(t *testing.T) {
	p, _ := openLocal(t, nil)
	m := txn.NewManager(time.Minute, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "via_txn"}
	rows := rowsFrom(0, 20, 0)
	b := sampleBatch(rows)
	defer b.Release()
	res, err := m.Write(ctx, txn.Write{Table: id, Provider: p, CreateIfMissing: true,
		TableOptions: map[string]string{"bucket": "3", "primary-key": "id"}},
		&batchSource{schema: sampleSchema, bs: []arrow.RecordBatch{b}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Rows != 20 {
		t.Fatalf("result %+v", res)
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Properties["bucket"] != "3" || spec.Properties["primary-key"] != "id" || spec.CurrentSnapshotID == nil {
		t.Errorf("spec properties %v, snapshot %v: want bucket 3, primary key id, one snapshot", spec.Properties, spec.CurrentSnapshotID)
	}
	if got := scanRendered(t, p, id); len(got) != 20 {
		t.Errorf("scan: %d rows, want 20", len(got))
	}
}
