package delta_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
)

// stageRows opens a create stream of id and writes n rows from row from;
// it returns the stream's receipts.
func stageRows(t *testing.T, p *delta.Provider, id catalogs.TableIdent, from, n int) []catalogs.WriteReceipt {
	t.Helper()
	ctx := context.Background()
	ws, err := p.OpenCreateStream(ctx, id, catalogtest.Schema, nil, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(int64(from), int64(n))
	defer b.Release()
	if err := ws.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestStagedCreate: a staged create's files are written while the table
// does not exist (not found, not listed, no _delta_log); CommitCreate
// publishes table and rows in version 0, and repeated after a lost reply
// answers the same version; a second create of the name is AlreadyExists
// and publishes nothing.
func TestStagedCreate(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "staged")
	rs := stageRows(t, p, id, 0, 4)
	if _, err := p.GetTableSpec(ctx, id); !errors.Is(err, catalogs.ErrNotFound) {
		t.Fatalf("table before its commit: %v, want not found", err)
	}
	if ts, err := p.ListTables(ctx, []string{"default"}); err != nil || len(ts) != 0 {
		t.Fatalf("tables before the commit: %v %v, want none", ts, err)
	}
	if _, err := os.Stat(filepath.Join(wh, "default", "staged", "_delta_log")); !os.IsNotExist(err) {
		t.Fatalf("_delta_log before the commit: %v", err)
	}
	out, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs)
	if err != nil || out.SnapshotID != 0 {
		t.Fatalf("CommitCreate: %+v %v", out, err)
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 4 {
		t.Fatalf("scan after the create: %d rows, %v", n, err)
	}
	if rec, ok, err := p.FindCommit(ctx, id, "c-1"); err != nil || !ok || rec.RowCount != 4 || rec.Outcome.SnapshotID != 0 {
		t.Fatalf("FindCommit: %+v %v %v", rec, ok, err)
	}
	if again, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs); err != nil || again.SnapshotID != 0 {
		t.Fatalf("repeated CommitCreate: %+v %v, want version 0", again, err)
	}
	other := stageRows(t, p, id, 10, 2)
	if _, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-2", other); !errors.Is(err, catalogs.ErrAlreadyExists) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 4 {
		t.Fatalf("scan after the lost create: %d rows, %v", n, err)
	}
	// An empty create is a table without files.
	empty := ident("default", "empty")
	if _, err := p.CommitCreate(ctx, empty, catalogtest.Schema, nil, "c-3", nil); err != nil {
		t.Fatal(err)
	}
	if spec, err := p.GetTableSpec(ctx, empty); err != nil || !spec.Schema.Equal(mustSpec(t, p, id).Schema) {
		t.Fatalf("empty table: %v %v", spec.Schema, err)
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

// TestStagedCreateRace: of 8 staged creates of one name at once exactly
// one lands, the others are AlreadyExists, and the table holds the
// winner's rows only.
func TestStagedCreateRace(t *testing.T) {
	p := openLocal(t, "")
	id := ident("default", "raced")
	const n = 8
	rs := make([][]catalogs.WriteReceipt, n)
	for i := range n {
		rs[i] = stageRows(t, p, id, 100*i, i+1)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.CommitCreate(context.Background(), id, catalogtest.Schema, nil, "c-"+string(rune('a'+i)), rs[i])
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("creates %d and %d both landed", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, catalogs.ErrAlreadyExists):
			t.Errorf("create %d: %v, want AlreadyExists", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no create landed")
	}
	if _, rows, err := scanAll(t, p, id); err != nil || rows != int64(won+1) {
		t.Fatalf("rows %d (%v), want the winner's %d", rows, err, won+1)
	}
}
