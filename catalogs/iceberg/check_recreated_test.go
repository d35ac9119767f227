package iceberg

import (
	"context"
	"errors"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/flightgw/flightgw/catalogs"
)

// TestCheckReceiptsRecreatedTable: receipts staged for a table that was
// then dropped and created again under the same name are a client's stale
// data, InvalidArgument naming the table (not Aborted, which tells a
// client to retry what can never succeed).
func TestCheckReceiptsRecreatedTable(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	b := idBatch(100, 5)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DropTable(ctx, id); err != nil {
		t.Fatal(err)
	}
	sc := ice.NewSchema(0, ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true})
	if _, err := p.cat.CreateTable(ctx, []string{"default", "t"}, sc); err != nil {
		t.Fatal(err)
	}
	err = p.CheckReceipts(ctx, id, []catalogs.WriteReceipt{r})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "earlier table") || !strings.Contains(err.Error(), id.String()) {
		t.Fatalf("receipts of a dropped table's namesake: %v, want InvalidArgument naming the table", err)
	}
}
