package iceberg

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/flightgw/flightgw/catalogs"
)

// TestPlanStaged: the plan of a table as a transaction sees it holds the
// committed files and the staged ones (only the staged ones for an
// overwrite), with their sizes and no snapshot; a table without a
// snapshot yet is its staged files; a receipt of another table is
// refused.
func TestPlanStaged(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	committed, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{})
	if err != nil || !committed.Plain || len(committed.Files) != 2 {
		t.Fatalf("committed plan %+v, %v", committed, err)
	}
	b := idBatch(100, 5)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	staged := []catalogs.WriteReceipt{r}

	plan, err := p.PlanStaged(ctx, id, catalogs.ScanRequest{}, staged, false)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Plain || len(plan.Files) != 3 || len(plan.FileBytes) != 3 || plan.SnapshotID != nil {
		t.Fatalf("append plan %+v", plan)
	}
	for _, f := range committed.Files {
		if !slices.Contains(plan.Files, f) {
			t.Errorf("committed file %s missing from %v", f, plan.Files)
		}
	}
	stagedFile := plan.Files[2]
	if slices.Contains(committed.Files, stagedFile) || plan.FileBytes[2] <= 0 {
		t.Errorf("staged file %s (%d bytes)", stagedFile, plan.FileBytes[2])
	}

	over, err := p.PlanStaged(ctx, id, catalogs.ScanRequest{}, staged, true)
	if err != nil {
		t.Fatal(err)
	}
	if !over.Plain || !slices.Equal(over.Files, []string{stagedFile}) {
		t.Errorf("overwrite plan %+v", over)
	}

	// A new table: no snapshot, its staged files only.
	sc := ice.NewSchema(0, ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true})
	if _, err := p.cat.CreateTable(ctx, []string{"default", "fresh"}, sc); err != nil {
		t.Fatal(err)
	}
	fresh := catalogs.TableIdent{Catalog: id.Catalog, Namespace: id.Namespace, Name: "fresh"}
	b = idBatch(0, 3)
	fr, err := p.WriteBatch(ctx, fresh, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	fp, err := p.PlanStaged(ctx, fresh, catalogs.ScanRequest{}, []catalogs.WriteReceipt{fr}, false)
	if err != nil || !fp.Plain || len(fp.Files) != 1 {
		t.Errorf("table without a snapshot: %+v, %v", fp, err)
	}

	// Receipts are checked against the table.
	_, err = p.PlanStaged(ctx, fresh, catalogs.ScanRequest{}, staged, false)
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "was written for table") {
		t.Errorf("a receipt of another table: %v", err)
	}
}
