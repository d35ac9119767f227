package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// TestCheckReceipts: a receipt staged for the table passes; one whose
// file was moved outside the table's location (its clear path and the
// path inside its encoded DataFile alike), or with a dot segment, or of
// another table, is refused naming it.
func TestCheckReceipts(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	b := idBatch(100, 5)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckReceipts(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatalf("a genuine receipt: %v", err)
	}
	var rm receiptMeta
	if err := json.Unmarshal(r.Metadata, &rm); err != nil || len(rm.Files) == 0 {
		t.Fatalf("receipt %s: %v", r.Metadata, err)
	}
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	loc := strings.TrimSuffix(tbl.Location(), "/")
	for name, path := range map[string]string{
		"outside":     "file:///etc/passwd",
		"sibling":     loc + "-other/data/x.parquet",
		"dot segment": loc + "/data/../../other/x.parquet",
	} {
		rm := rm
		rm.Files = append([]stagedFile(nil), rm.Files...)
		rm.Files[0].Path = path
		rm.Files[0].DataFile = forgedDataFile(t, tbl, path)
		raw, _ := json.Marshal(rm)
		err := p.CheckReceipts(ctx, id, []catalogs.WriteReceipt{{Metadata: raw}})
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "outside the table's location") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The clear path left alone, the DataFile inside names another file.
	b = idBatch(200, 5)
	r2, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	var rm2 receiptMeta
	if err := json.Unmarshal(r2.Metadata, &rm2); err != nil {
		t.Fatal(err)
	}
	rm.Files = append([]stagedFile(nil), rm.Files...)
	rm.Files[0].DataFile = rm2.Files[0].DataFile
	raw, _ := json.Marshal(rm)
	if err := p.CheckReceipts(ctx, id, []catalogs.WriteReceipt{{Metadata: raw}}); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("mismatched data file: %v", err)
	}
	other := catalogs.TableIdent{Catalog: id.Catalog, Namespace: id.Namespace, Name: "other"}
	if err := p.CheckReceipts(ctx, other, []catalogs.WriteReceipt{r}); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("another table's receipt: %v", err)
	}
}

// forgedDataFile encodes a data file naming path, as a hostile worker
// could: the receipt's clear path and its DataFile agree.
func forgedDataFile(t *testing.T, tbl *table.Table, path string) []byte {
	t.Helper()
	meta := tbl.Metadata()
	bld, err := ice.NewDataFileBuilder(meta.PartitionSpec(), ice.EntryContentData, path, ice.ParquetFile, nil, nil, nil, 5, 100)
	if err != nil {
		t.Fatal(err)
	}
	b, err := codec.EncodeDataFile(bld.Build(), meta.PartitionSpec(), meta.CurrentSchema(), meta.Version())
	if err != nil {
		t.Fatal(err)
	}
	return b
}
