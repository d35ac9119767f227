package delta_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
)

// stageRows stages n rows from row from in a create stream of id.
func stageRows(t *testing.T, p *delta.Provider, id catalogs.TableIdent, from, n int) []catalogs.WriteReceipt {
	t.Helper()
	return catalogtest.StageCreate(t, p, id, catalogtest.Schema, nil, "", int64(from), int64(n))
}

// TestStagedCreate: what is Delta's in a staged create (the backend
// contract, catalogtest StagedCreate, checks the rest: invisible until
// its commit, the race, discard, an empty create): no _delta_log before
// the commit; the commit is log version 0, found by its commit id, and
// repeated after a lost reply answers version 0; receipts of another
// schema are refused.
func TestStagedCreate(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "staged")
	rs := stageRows(t, p, id, 0, 4)
	if _, err := os.Stat(filepath.Join(wh, "default", "staged", "_delta_log")); !os.IsNotExist(err) {
		t.Fatalf("_delta_log before the commit: %v", err)
	}
	out, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs)
	if err != nil || out.SnapshotID != 0 {
		t.Fatalf("CommitCreate: %+v %v", out, err)
	}
	if rec, ok, err := p.FindCommit(ctx, id, "c-1"); err != nil || !ok || rec.RowCount != 4 || rec.Outcome.SnapshotID != 0 {
		t.Fatalf("FindCommit: %+v %v %v", rec, ok, err)
	}
	if again, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs); err != nil || again.SnapshotID != 0 {
		t.Fatalf("repeated CommitCreate: %+v %v, want version 0", again, err)
	}
	// Receipts of another schema are refused.
	narrow := arrow.NewSchema(catalogtest.Schema.Fields()[:1], nil)
	if _, err := p.CommitCreate(ctx, ident("default", "narrow"), narrow, nil, "c-4", rs); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("receipts of another schema: %v, want InvalidArgument", err)
	}
}

func mustSpec(t *testing.T, p *delta.Provider, id catalogs.TableIdent) catalogs.TableSpec {
	t.Helper()
	s, err := p.GetTableSpec(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
