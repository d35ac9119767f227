package iceberg_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// stageRows stages n rows from row from in a create stream of id with
// opts.
func stageRows(t *testing.T, p *iceberg.Provider, id catalogs.TableIdent, opts map[string]string, from, n int) []catalogs.WriteReceipt {
	t.Helper()
	return catalogtest.StageCreate(t, p, id, catalogtest.Schema, opts, "", int64(from), int64(n))
}

// metadataFiles lists the *.metadata.json files under dir.
func metadataFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := listDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if strings.HasSuffix(f, ".metadata.json") {
			out = append(out, f)
		}
	}
	return out
}

func defaultTable(name string) catalogs.TableIdent {
	return catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: name}
}

// TestStagedCreate: what is Iceberg's in a staged create (the backend
// contract, catalogtest StagedCreate, checks the rest: invisible until
// its commit, the race, discard): no metadata file before the commit;
// CommitCreate publishes table and rows in one snapshot with the options'
// layout, found by its commit id and answered again when repeated; a
// second create of the name leaves one metadata file, and its receipts,
// written for the same layout, append to the winner's table (a
// create_append that lost); an empty create repeated is its own table;
// receipts of another table are refused.
func TestStagedCreate(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	if p.StagesCreate(map[string]string{iceberg.OptFormatVersion: "1"}) || !p.StagesCreate(nil) {
		t.Error("StagesCreate: want format version 1 made up front, the default staged")
	}
	id := defaultTable("staged")
	opts := map[string]string{iceberg.OptPartition: "bucket(2, id)", iceberg.OptSort: "id desc", iceberg.OptFormatVersion: "3"}
	rs := stageRows(t, p, id, opts, 0, 4)
	dir := filepath.Join(wh, "default.db", "staged")
	if m := metadataFiles(t, dir); len(m) != 0 {
		t.Fatalf("metadata files before the commit: %v", m)
	}
	out, err := p.CommitCreate(ctx, id, catalogtest.Schema, opts, "c-1", rs)
	if err != nil || out.SnapshotID == 0 {
		t.Fatalf("CommitCreate: %+v %v", out, err)
	}
	if n := scanRows(t, p, id); n != 4 {
		t.Fatalf("scan after the create: %d rows", n)
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if spec.CurrentSnapshotID == nil || *spec.CurrentSnapshotID != out.SnapshotID {
		t.Errorf("current snapshot %v, want %d", spec.CurrentSnapshotID, out.SnapshotID)
	}
	if f := spec.PartitionSpec.Fields; len(f) != 1 || f[0].Transform.String() != "bucket[2]" {
		t.Errorf("partition spec %+v, want bucket(2, id)", spec.PartitionSpec)
	}
	m := metadataFiles(t, dir)
	if len(m) != 1 {
		t.Fatalf("metadata files after the create: %v, want one", m)
	}
	raw, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		FormatVersion int `json:"format-version"`
		SortOrders    []struct {
			OrderID int `json:"order-id"`
			Fields  []struct {
				Direction string `json:"direction"`
			} `json:"fields"`
		} `json:"sort-orders"`
		DefaultSortOrderID int               `json:"default-sort-order-id"`
		Schemas            []json.RawMessage `json:"schemas"`
	}
	if err := json.Unmarshal(raw, &md); err != nil {
		t.Fatal(err)
	}
	sorted := false
	for _, o := range md.SortOrders {
		sorted = sorted || (o.OrderID == md.DefaultSortOrderID && len(o.Fields) == 1 && o.Fields[0].Direction == "desc")
	}
	if md.FormatVersion != 3 || !sorted || len(md.Schemas) != 1 {
		t.Errorf("metadata: format version %d, sort orders %+v (default %d), %d schemas; want 3, id desc, one schema",
			md.FormatVersion, md.SortOrders, md.DefaultSortOrderID, len(md.Schemas))
	}
	if rec, ok, err := p.FindCommit(ctx, id, "c-1"); err != nil || !ok || rec.RowCount != 4 || rec.Outcome.SnapshotID != out.SnapshotID {
		t.Fatalf("FindCommit: %+v %v %v", rec, ok, err)
	}
	if again, err := p.CommitCreate(ctx, id, catalogtest.Schema, opts, "c-1", rs); err != nil || again.SnapshotID != out.SnapshotID {
		t.Fatalf("repeated CommitCreate: %+v %v, want snapshot %d", again, err, out.SnapshotID)
	}
	other := stageRows(t, p, id, opts, 10, 2)
	if _, err := p.CommitCreate(ctx, id, catalogtest.Schema, opts, "c-2", other); !errors.Is(err, catalogs.ErrAlreadyExists) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	if n := scanRows(t, p, id); n != 4 {
		t.Fatalf("scan after the lost create: %d rows", n)
	}
	if m := metadataFiles(t, dir); len(m) != 1 {
		t.Errorf("metadata files after a create and a lost one: %v, want the create's one", m)
	}
	if _, err := p.CommitOnce(ctx, id, "append-loser", other); err != nil {
		t.Fatalf("the lost create's receipts appended: %v", err)
	}
	if n := scanRows(t, p, id); n != 6 {
		t.Fatalf("scan after the lost create's append: %d rows, want 6", n)
	}
	// An empty create is a table without a snapshot; repeated, it is its own.
	empty := defaultTable("empty")
	if _, err := p.CommitCreate(ctx, empty, catalogtest.Schema, nil, "c-3", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitCreate(ctx, empty, catalogtest.Schema, nil, "c-3", nil); err != nil {
		t.Fatalf("repeated empty create: %v", err)
	}
	if _, err := p.CommitCreate(ctx, empty, catalogtest.Schema, nil, "c-4", nil); !errors.Is(err, catalogs.ErrAlreadyExists) {
		t.Fatalf("another empty create: %v, want AlreadyExists", err)
	}
	if m := metadataFiles(t, filepath.Join(wh, "default.db", "empty")); len(m) != 1 {
		t.Errorf("metadata files of the empty table: %v, want one", m)
	}
	if espec, err := p.GetTableSpec(ctx, empty); err != nil || espec.CurrentSnapshotID != nil {
		t.Fatalf("empty table: %+v %v", espec, err)
	}
	// Receipts of another schema or layout are refused.
	narrow := arrow.NewSchema(catalogtest.Schema.Fields()[:1], nil)
	if _, err := p.CommitCreate(ctx, defaultTable("narrow"), narrow, nil, "c-5", other); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("receipts of another schema: %v, want InvalidArgument", err)
	}
	if _, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-6", other); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("receipts of another layout: %v, want InvalidArgument", err)
	}
}

// TestStagedCreateRaceEmpty: of 8 empty creates of one name at once
// exactly one lands and the losers' metadata files are deleted.
func TestStagedCreateRaceEmpty(t *testing.T) {
	p, wh := openLocal(t, nil)
	id := defaultTable("empty_raced")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.CommitCreate(context.Background(), id, catalogtest.Schema, nil, "e-"+string(rune('a'+i)), nil)
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, catalogs.ErrAlreadyExists):
			t.Errorf("create %d: %v, want AlreadyExists", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d empty creates landed, want 1", won)
	}
	if m := metadataFiles(t, filepath.Join(wh, "default.db", "empty_raced")); len(m) != 1 {
		t.Errorf("metadata files after the race: %v, want the winner's one", m)
	}
}
