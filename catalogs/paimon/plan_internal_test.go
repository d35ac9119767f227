package paimon

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// stage writes rows [from, from+n) of table id without committing them.
func stage(t *testing.T, p *Provider, id catalogs.TableIdent, from, n int64) catalogs.WriteReceipt {
	t.Helper()
	b := catalogtest.Batch(from, n)
	defer b.Release()
	r, err := p.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPlanStaged: a transaction's plan of an append table is the
// committed files and the staged ones (only the staged ones for an
// overwrite), with their sizes and no snapshot, under the partition and
// bucket directories; a table without a commit is its staged files; a
// primary-key table is not plain and says why; planning commits nothing;
// a receipt of another table is refused.
func TestPlanStaged(t *testing.T) {
	ctx := context.Background()
	p := mergeCatalog(t, nil)
	ns := []string{"default"}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: ns, Name: "app"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	commitRows(t, p, id, 0, 10, false)
	commitRows(t, p, id, 10, 10, false)
	committed, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{})
	if err != nil || !committed.Plain || len(committed.Files) != 2 {
		t.Fatalf("committed plan %+v, %v", committed, err)
	}
	staged := []catalogs.WriteReceipt{stage(t, p, id, 100, 5)}

	plan, err := p.PlanStaged(ctx, id, catalogs.ScanRequest{}, staged, false)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Plain || len(plan.Files) != 3 || len(plan.FileBytes) != 3 || plan.SnapshotID != nil || plan.Root != committed.Root {
		t.Fatalf("append plan %+v", plan)
	}
	if !slices.Equal(plan.Files[:2], committed.Files) {
		t.Errorf("committed files %v missing from %v", committed.Files, plan.Files)
	}
	fi, err := os.Stat(plan.Files[2])
	if err != nil || fi.Size() != plan.FileBytes[2] || !strings.Contains(plan.Files[2], "/bucket-0/") {
		t.Errorf("staged file %s (%d bytes): %v", plan.Files[2], plan.FileBytes[2], err)
	}

	over, err := p.PlanStaged(ctx, id, catalogs.ScanRequest{}, staged, true)
	if err != nil || !over.Plain || !slices.Equal(over.Files, plan.Files[2:]) {
		t.Errorf("overwrite plan %+v, %v", over, err)
	}
	empty, err := p.PlanStaged(ctx, id, catalogs.ScanRequest{}, nil, true)
	if err != nil || !empty.Plain || len(empty.Files) != 0 {
		t.Errorf("overwrite with nothing staged: %+v, %v", empty, err)
	}
	if got := scanIDs(t, p, id); len(got) != 20 {
		t.Errorf("planning committed rows: %d rows, want 20", len(got))
	}

	// A table whose first data are the transaction's.
	fresh := catalogs.TableIdent{Catalog: "lake", Namespace: ns, Name: "fresh"}
	if _, err := p.CreateTable(ctx, fresh, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	fp, err := p.PlanStaged(ctx, fresh, catalogs.ScanRequest{}, []catalogs.WriteReceipt{stage(t, p, fresh, 0, 3)}, false)
	if err != nil || !fp.Plain || len(fp.Files) != 1 {
		t.Errorf("table without a commit: %+v, %v", fp, err)
	}

	// A partitioned table's staged files lie in their partition
	// directories.
	pt := catalogs.TableIdent{Catalog: "lake", Namespace: ns, Name: "part"}
	psch := arrow.NewSchema(append(catalogtest.Schema.Fields(), arrow.Field{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	if _, err := p.CreateTable(ctx, pt, psch, map[string]string{"partition": "p"}); err != nil {
		t.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, psch)
	for i := range int64(4) {
		bld.Field(0).(*array.Int64Builder).Append(i)
		bld.Field(1).(*array.StringBuilder).Append("x")
		bld.Field(2).(*array.StringBuilder).Append([]string{"a", "b"}[i%2])
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	pr, err := p.WriteBatch(ctx, pt, rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	ppl, err := p.PlanStaged(ctx, pt, catalogs.ScanRequest{}, []catalogs.WriteReceipt{pr}, false)
	if err != nil || !ppl.Plain || len(ppl.Files) != 2 {
		t.Fatalf("partitioned plan %+v, %v", ppl, err)
	}
	for i, f := range ppl.Files {
		if _, err := os.Stat(f); err != nil || !strings.Contains(f, "/p=") {
			t.Errorf("partitioned staged file %d: %s: %v", i, f, err)
		}
	}

	// A primary-key table is merged on read: not plain, with the reason.
	pk := catalogs.TableIdent{Catalog: "lake", Namespace: ns, Name: "pk"}
	if _, err := p.CreateTable(ctx, pk, catalogtest.Schema, map[string]string{"primary-key": "id", "bucket": "2"}); err != nil {
		t.Fatal(err)
	}
	pp, err := p.PlanStaged(ctx, pk, catalogs.ScanRequest{}, []catalogs.WriteReceipt{stage(t, p, pk, 0, 3)}, false)
	if err != nil || pp.Plain || len(pp.Files) != 0 || !strings.Contains(pp.Reason, "merged on read") {
		t.Errorf("primary-key table: %+v, %v", pp, err)
	}

	// Receipts are checked against the table.
	_, err = p.PlanStaged(ctx, fresh, catalogs.ScanRequest{}, staged, false)
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "belongs to table") {
		t.Errorf("a receipt of another table: %v", err)
	}
	_, err = p.PlanStaged(ctx, catalogs.TableIdent{Catalog: "lake", Namespace: ns, Name: "nope"}, catalogs.ScanRequest{}, nil, false)
	if !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("unknown table: %v", err)
	}
}
