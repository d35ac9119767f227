package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/txn"
)

// TestMaintainAfterCommitsCompactsPaimon: with maintenance.after_commits
// and no tasks configured, a Paimon primary-key table is compacted after
// the commits that push a bucket past num-sorted-run.compaction-trigger
// (Paimon's default 5), as Paimon Java's writer compacts while it
// commits: its latest snapshot is then a COMPACT one.
func TestMaintainAfterCommitsCompactsPaimon(t *testing.T) {
	wh := t.TempDir()
	ctx := context.Background()
	p, err := paimon.Open(ctx, "lake", map[string]string{paimon.PropWarehouse: wh, paimon.PropCreateNamespaces: "default"})
	if err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "kv"}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	if _, err := p.CreateTable(ctx, id, schema, map[string]string{"primary-key": "id", "bucket": "1"}); err != nil {
		t.Fatal(err)
	}
	cats := []handlers.Catalog{{Name: "lake", Type: "paimon", Provider: p}}
	l := newMaintainLoop(MaintenanceConfig{AfterCommits: 6}, time.Hour, newMetrics(cats), cats, slog.Default())
	txns := txn.NewManager(time.Minute, nil, txn.WithObserver(l))
	defer txns.Close()
	l.start(txns)
	defer l.stop()
	latest := func() (int64, string) {
		b, err := os.ReadFile(filepath.Join(wh, "default.db", "kv", "snapshot", "LATEST"))
		if err != nil {
			return 0, ""
		}
		var n int64
		fmt.Sscan(string(b), &n)
		b, err = os.ReadFile(filepath.Join(wh, "default.db", "kv", "snapshot", fmt.Sprintf("snapshot-%d", n)))
		if err != nil {
			return 0, ""
		}
		var s struct {
			CommitKind string `json:"commitKind"`
		}
		_ = json.Unmarshal(b, &s)
		return n, s.CommitKind
	}
	for i := range 6 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for k := range int64(4) {
			b.Field(0).(*array.Int64Builder).Append(k)
			b.Field(1).(*array.Int64Builder).Append(int64(i))
		}
		rec := b.NewRecordBatch()
		b.Release()
		r, err := p.WriteBatch(ctx, id, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.CommitOnce(ctx, id, fmt.Sprintf("c%d", i), []catalogs.WriteReceipt{r})
		if err != nil {
			t.Fatal(err)
		}
		l.Committed(id, out, nil)
	}
	waitFor(t, "a COMPACT snapshot after 6 commits", func() bool { n, k := latest(); return n == 7 && k == "COMPACT" })
	// A configured full_compact is run on a backend that compacts,
	// though no backend lists it among the tasks it runs by default.
	full := newMaintainLoop(MaintenanceConfig{AfterCommits: 1, Tasks: []string{catalogs.TaskFullCompact, catalogs.TaskRewriteManifests}},
		time.Hour, newMetrics(cats), cats, slog.Default())
	if got := full.tasksOf(cats[0]); len(got) != 1 || got[0] != catalogs.TaskFullCompact {
		t.Errorf("configured tasks run on Paimon: %v, want [full_compact]", got)
	}
}
