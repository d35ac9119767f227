package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// openLake opens an embedded catalog in a temporary directory.
func openLake(t *testing.T) (*Provider, map[string]string) {
	t.Helper()
	props, err := EmbeddedProperties(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(context.Background(), EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, props
}

// typedBatch builds rows from..from+n-1 of sc: every column holds a value
// derived from the row number (a negative one for signed integers).
func typedBatch(t *testing.T, sc *arrow.Schema, from, n int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := from; i < from+n; i++ {
		for c, f := range sc.Fields() {
			switch fb := b.Field(c).(type) {
			case *array.Int8Builder:
				fb.Append(int8(-i))
			case *array.Int16Builder:
				fb.Append(int16(-i * 100))
			case *array.Int32Builder:
				fb.Append(int32(-i))
			case *array.Int64Builder:
				fb.Append(int64(i))
			case *array.Uint8Builder:
				fb.Append(uint8(i))
			case *array.Uint16Builder:
				fb.Append(uint16(i * 300))
			case *array.Uint32Builder:
				fb.Append(uint32(i) + 4_000_000_000)
			case *array.Float64Builder:
				fb.Append(float64(i) / 2)
			case *array.BooleanBuilder:
				fb.Append(i%2 == 0)
			case *array.StringBuilder:
				fb.Append(fmt.Sprintf("%s-%d", f.Name, i))
			case *array.LargeStringBuilder:
				fb.Append(fmt.Sprintf("%s-%d", f.Name, i))
			case *array.BinaryBuilder:
				fb.Append([]byte(fmt.Sprintf("b%d", i)))
			case *array.TimestampBuilder:
				ts := base.Add(time.Duration(i) * time.Second)
				if f.Type.(*arrow.TimestampType).Unit == arrow.Nanosecond {
					fb.Append(arrow.Timestamp(ts.UnixNano()))
				} else {
					fb.Append(arrow.Timestamp(ts.UnixMicro()))
				}
			default:
				t.Fatalf("column %s: no test values for %s", f.Name, f.Type)
			}
		}
	}
	return b.NewRecordBatch()
}

// commitBatch appends rows from..from+n-1 of sc in one snapshot.
func commitBatch(t *testing.T, p *Provider, id catalogs.TableIdent, sc *arrow.Schema, from, n int) {
	t.Helper()
	b := typedBatch(t, sc, from, n)
	defer b.Release()
	r, err := p.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(context.Background(), id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
}

// replaceStream writes rows from..from+n-1 of sc through a replace stream
// and returns its receipts.
func replaceStream(t *testing.T, p *Provider, id catalogs.TableIdent, sc *arrow.Schema, from, n int) []catalogs.WriteReceipt {
	t.Helper()
	ctx := context.Background()
	s, err := p.OpenReplaceStream(ctx, id, sc)
	if err != nil {
		t.Fatalf("OpenReplaceStream: %v", err)
	}
	if n > 0 {
		b := typedBatch(t, sc, from, n)
		defer b.Release()
		if err := s.Write(ctx, b); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	receipts, err := s.Close(ctx)
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	return receipts
}

func loadMeta(t *testing.T, p *Provider, id catalogs.TableIdent) table.Metadata {
	t.Helper()
	tbl, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tbl.Metadata()
}

func receiptFormats(t *testing.T, receipts []catalogs.WriteReceipt) []string {
	t.Helper()
	var out []string
	for _, r := range receipts {
		var rm receiptMeta
		if err := json.Unmarshal(r.Metadata, &rm); err != nil {
			t.Fatal(err)
		}
		out = append(out, rm.Format)
	}
	return out
}

// wantValues checks that column col of a scan holds want, in any order.
func wantValues(t *testing.T, got scanResult, col string, want []string) {
	t.Helper()
	if g := sorted(got.values[col]); fmt.Sprint(g) != fmt.Sprint(sorted(want)) {
		t.Errorf("column %s = %v, want %v", col, g, sorted(want))
	}
}

// TestReplaceConvertedTypesKeepsTable: an upload in the Arrow types the
// gateway converts (int8 to int, large_string to string, timestamp[ns] to
// timestamp[us], ...) is the table's own schema: the replace is one
// overwrite snapshot on the same table, under the same schema.
func TestReplaceConvertedTypesKeepsTable(t *testing.T) {
	p, _ := openLake(t)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "conv"}
	sent := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "lb", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	}, nil)
	converted := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ls", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "lb", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	if _, err := p.CreateTable(ctx, id, converted, nil); err != nil {
		t.Fatal(err)
	}
	commitBatch(t, p, id, converted, 0, 5)
	commitBatch(t, p, id, converted, 5, 5)
	before := loadMeta(t, p, id)

	receipts := replaceStream(t, p, id, sent, 100, 7)
	for _, f := range receiptFormats(t, receipts) {
		if f != receiptFormat {
			t.Fatalf("receipt format %q: the upload's schema is the table's, want an ordinary receipt", f)
		}
	}
	out, err := p.CommitOverwrite(ctx, id, "replace-conv", receipts)
	if err != nil {
		t.Fatalf("CommitOverwrite: %v", err)
	}

	after := loadMeta(t, p, id)
	if after.TableUUID() != before.TableUUID() {
		t.Errorf("table uuid %s, was %s: the table was recreated", after.TableUUID(), before.TableUUID())
	}
	if got, want := len(after.Snapshots()), len(before.Snapshots())+1; got != want {
		t.Errorf("%d snapshots, want %d (history kept, one new)", got, want)
	}
	cur := after.CurrentSnapshot()
	if cur == nil || cur.SnapshotID != out.SnapshotID || cur.Summary.Operation != table.OpOverwrite {
		t.Errorf("current snapshot %+v, want the overwrite %d", cur, out.SnapshotID)
	}
	if after.CurrentSchema().ID != before.CurrentSchema().ID || len(after.Schemas()) != len(before.Schemas()) {
		t.Errorf("schema %d of %d, was %d of %d: a same-schema replace added a schema",
			after.CurrentSchema().ID, len(after.Schemas()), before.CurrentSchema().ID, len(before.Schemas()))
	}
	got := scanAll(t, p, id, catalogs.ScanRequest{})
	if got.rows != 7 {
		t.Fatalf("read %d rows, want the 7 sent", got.rows)
	}
	wantValues(t, got, "i8", []string{"-100", "-101", "-102", "-103", "-104", "-105", "-106"})
	wantValues(t, got, "u32", []string{"4000000100", "4000000101", "4000000102", "4000000103", "4000000104", "4000000105", "4000000106"})
	wantValues(t, got, "ls", []string{"ls-100", "ls-101", "ls-102", "ls-103", "ls-104", "ls-105", "ls-106"})
}

// evolveSchemas are a table's schema and a replace's that drops "extra",
// renames "name" to "full_name" and adds "added".
var (
	oldSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "extra", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	newSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "full_name", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "added", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
)

func evolveTable(t *testing.T, p *Provider, name string) catalogs.TableIdent {
	t.Helper()
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: name}
	if _, err := p.CreateTable(context.Background(), id, oldSchema, nil); err != nil {
		t.Fatal(err)
	}
	commitBatch(t, p, id, oldSchema, 0, 4)
	commitBatch(t, p, id, oldSchema, 4, 4)
	return id
}

// TestReplaceNewSchema: a replace whose columns really differ keeps the
// table and its history and lands the new schema with the data in one
// commit; kept columns keep their field ids.
func TestReplaceNewSchema(t *testing.T) {
	p, _ := openLake(t)
	ctx := context.Background()
	id := evolveTable(t, p, "evolve")
	before := loadMeta(t, p, id)

	receipts := replaceStream(t, p, id, newSchema, 50, 6)
	for _, f := range receiptFormats(t, receipts) {
		if f != replaceFormat {
			t.Fatalf("receipt format %q, want %q", f, replaceFormat)
		}
	}
	// Nothing is visible before the commit: the old schema and data.
	if sc := loadMeta(t, p, id).CurrentSchema(); !sc.Equals(before.CurrentSchema()) {
		t.Fatalf("the schema changed before the commit: %s", sc)
	}
	out, err := p.CommitOverwrite(ctx, id, "replace-new", receipts)
	if err != nil {
		t.Fatalf("CommitOverwrite: %v", err)
	}

	after := loadMeta(t, p, id)
	if after.TableUUID() != before.TableUUID() {
		t.Errorf("table uuid %s, was %s: the table was recreated", after.TableUUID(), before.TableUUID())
	}
	if got, want := len(after.Snapshots()), len(before.Snapshots())+1; got != want {
		t.Errorf("%d snapshots, want %d", got, want)
	}
	for _, s := range before.Snapshots() {
		if after.SnapshotByID(s.SnapshotID) == nil {
			t.Errorf("snapshot %d of the old table is gone", s.SnapshotID)
		}
	}
	if len(slices.Collect(after.PreviousFiles())) <= len(slices.Collect(before.PreviousFiles())) {
		t.Errorf("metadata log did not grow: older metadata not kept")
	}
	cur := after.CurrentSnapshot()
	sc := after.CurrentSchema()
	if cur == nil || cur.SnapshotID != out.SnapshotID || cur.Summary.Operation != table.OpOverwrite ||
		cur.SchemaID == nil || *cur.SchemaID != sc.ID {
		t.Errorf("current snapshot %+v, want the overwrite %d under schema %d", cur, out.SnapshotID, sc.ID)
	}
	if got := columnNamesOf(sc); got != "id,full_name,score,added" {
		t.Errorf("current schema columns %s", got)
	}
	oldSc := before.CurrentSchema()
	for _, keep := range []string{"id", "score"} {
		o, _ := oldSc.FindFieldByName(keep)
		n, _ := sc.FindFieldByName(keep)
		if o.ID != n.ID {
			t.Errorf("column %s: field id %d, was %d", keep, n.ID, o.ID)
		}
	}
	for _, fresh := range []string{"full_name", "added"} {
		if n, _ := sc.FindFieldByName(fresh); n.ID <= before.LastColumnID() {
			t.Errorf("column %s: field id %d is not above the old last-column-id %d", fresh, n.ID, before.LastColumnID())
		}
	}
	got := scanAll(t, p, id, catalogs.ScanRequest{})
	if got.rows != 6 {
		t.Fatalf("read %d rows, want 6", got.rows)
	}
	wantValues(t, got, "id", []string{"50", "51", "52", "53", "54", "55"})
	wantValues(t, got, "full_name", []string{"full_name-50", "full_name-51", "full_name-52", "full_name-53", "full_name-54", "full_name-55"})
	wantValues(t, got, "added", []string{"true", "false", "true", "false", "true", "false"})
	// The old snapshot still reads as it was.
	old := before.CurrentSnapshot().SnapshotID
	if got := scanAll(t, p, id, catalogs.ScanRequest{SnapshotID: &old}); got.rows != 8 || len(got.values["extra"]) != 8 {
		t.Errorf("old snapshot reads %d rows, columns %v", got.rows, got.fields)
	}
	// The same replace again is the table's schema now: an ordinary stream.
	again := replaceStream(t, p, id, newSchema, 60, 2)
	if f := receiptFormats(t, again); f[0] != receiptFormat {
		t.Errorf("replace with the current schema: receipt format %q", f[0])
	}
	if err := p.Discard(ctx, id, again); err != nil {
		t.Fatal(err)
	}
}

func columnNamesOf(sc *ice.Schema) string {
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

// TestReplaceEmptyUploadSetsSchema: a replace with no rows still lands its
// schema, and leaves the table empty.
func TestReplaceEmptyUploadSetsSchema(t *testing.T) {
	p, _ := openLake(t)
	id := evolveTable(t, p, "empty")
	receipts := replaceStream(t, p, id, newSchema, 0, 0)
	if len(receipts) != 1 {
		t.Fatalf("%d receipts, want one carrying the schema", len(receipts))
	}
	if _, err := p.CommitOverwrite(context.Background(), id, "replace-empty", receipts); err != nil {
		t.Fatal(err)
	}
	meta := loadMeta(t, p, id)
	if got := columnNamesOf(meta.CurrentSchema()); got != "id,full_name,score,added" {
		t.Errorf("schema %s after an empty replace", got)
	}
	if got := scanAll(t, p, id, catalogs.ScanRequest{}); got.rows != 0 {
		t.Errorf("read %d rows after an empty replace", got.rows)
	}
}

// racingCatalog runs before once, just ahead of the first CommitTable,
// as a writer racing the commit would.
type racingCatalog struct {
	catalog.Catalog
	once   sync.Once
	before func()
}

func (c *racingCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	c.once.Do(c.before)
	return c.Catalog.CommitTable(ctx, id, reqs, ups)
}

// TestReplaceRacesAppend: an append landing between the replace's load
// and its commit loses the replace its compare-and-swap; the retry
// replaces the appended data too, under the new schema.
func TestReplaceRacesAppend(t *testing.T) {
	p, props := openLake(t)
	ctx := context.Background()
	id := evolveTable(t, p, "race")
	other, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	receipts := replaceStream(t, p, id, newSchema, 50, 3)
	p.cat = &racingCatalog{Catalog: p.cat, before: func() { commitBatch(t, other, id, oldSchema, 100, 2) }}
	out, err := p.CommitOverwrite(ctx, id, "replace-race", receipts)
	if err != nil {
		t.Fatalf("CommitOverwrite: %v", err)
	}
	if out.Retried != 1 {
		t.Errorf("Retried = %d, want 1 (the racing append)", out.Retried)
	}
	meta := loadMeta(t, p, id)
	if got := len(meta.Snapshots()); got != 4 {
		t.Errorf("%d snapshots, want 4 (two appends, the racing append, the replace)", got)
	}
	got := scanAll(t, p, id, catalogs.ScanRequest{})
	wantValues(t, got, "id", []string{"50", "51", "52"})
	if columnNamesOf(meta.CurrentSchema()) != "id,full_name,score,added" {
		t.Errorf("schema %s", columnNamesOf(meta.CurrentSchema()))
	}
}

// TestReplaceRacesSchemaChange: a schema change landing while a replace
// is written makes the replace fail with ErrConflict naming the table
// (its field ids were derived from the old schema), leaving the racing
// change in place.
func TestReplaceRacesSchemaChange(t *testing.T) {
	p, props := openLake(t)
	ctx := context.Background()
	id := evolveTable(t, p, "race_schema")
	other, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	receipts := replaceStream(t, p, id, newSchema, 50, 3)
	racing := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "other", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	p.cat = &racingCatalog{Catalog: p.cat, before: func() {
		if _, err := other.CommitOverwrite(ctx, id, "", replaceStream(t, other, id, racing, 0, 1)); err != nil {
			t.Errorf("racing replace: %v", err)
		}
	}}
	_, err = p.CommitOverwrite(ctx, id, "replace-loses", receipts)
	if !errors.Is(err, catalogs.ErrConflict) || !strings.Contains(err.Error(), id.String()) {
		t.Fatalf("CommitOverwrite = %v, want ErrConflict naming %s", err, id)
	}
	if got := columnNamesOf(loadMeta(t, p, id).CurrentSchema()); got != "id,other" {
		t.Errorf("schema %s, want the racing replace's", got)
	}
}

// TestReplaceRefusesPartitionColumnDrop: dropping the column the partition
// spec uses is refused up front, naming the partition field.
func TestReplaceRefusesPartitionColumnDrop(t *testing.T) {
	p, _ := openLake(t)
	ctx := context.Background()
	sc := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 2, Name: "region", Type: ice.PrimitiveTypes.String},
	)
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region_part", Transform: ice.IdentityTransform{}})
	if _, err := p.cat.CreateTable(ctx, []string{"default", "parts"}, sc, catalog.WithPartitionSpec(&spec)); err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "parts"}
	_, err := p.OpenReplaceStream(ctx, id, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), `"region_part"`) {
		t.Fatalf("OpenReplaceStream = %v, want ErrInvalidArgument naming region_part", err)
	}
	// Keeping the partition column and adding another is fine.
	wider := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	receipts := replaceStream(t, p, id, wider, 0, 4)
	if _, err := p.CommitOverwrite(ctx, id, "wider", receipts); err != nil {
		t.Fatalf("CommitOverwrite: %v", err)
	}
	if got := scanAll(t, p, id, catalogs.ScanRequest{}); got.rows != 4 {
		t.Errorf("read %d rows", got.rows)
	}
}

// TestReplaceReceiptRules: replace receipts only commit as an overwrite,
// not mixed with ordinary ones, and a receipt whose schema reuses a field
// id for another column is refused.
func TestReplaceReceiptRules(t *testing.T) {
	p, _ := openLake(t)
	ctx := context.Background()
	id := evolveTable(t, p, "rules")
	receipts := replaceStream(t, p, id, newSchema, 0, 2)
	if _, err := p.Commit(ctx, id, receipts); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("Commit of replace receipts = %v, want ErrInvalidArgument", err)
	}
	b := typedBatch(t, oldSchema, 0, 1)
	plain, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOverwrite(ctx, id, "", append(receipts, plain)); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("CommitOverwrite of mixed receipts = %v, want ErrInvalidArgument", err)
	}
	// Forge a receipt whose new column takes the id of "name".
	var rm receiptMeta
	if err := json.Unmarshal(receipts[0].Metadata, &rm); err != nil {
		t.Fatal(err)
	}
	var sc ice.Schema
	if err := json.Unmarshal(rm.Replace.Schema, &sc); err != nil {
		t.Fatal(err)
	}
	name, _ := loadMeta(t, p, id).CurrentSchema().FindFieldByName("name")
	fields := sc.Fields()
	for i := range fields {
		if fields[i].Name == "full_name" {
			fields[i].ID = name.ID
		}
	}
	rm.Replace.Schema, _ = json.Marshal(ice.NewSchema(0, fields...))
	raw, _ := json.Marshal(rm)
	bad := []catalogs.WriteReceipt{{Metadata: raw}}
	if _, err := p.CommitOverwrite(ctx, id, "", bad); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "reuses id") {
		t.Errorf("CommitOverwrite of a forged schema = %v, want ErrInvalidArgument (reuses id)", err)
	}
	// A version 1 receipt carrying a replace is not accepted either.
	rm.Format = receiptFormat
	raw, _ = json.Marshal(rm)
	if _, err := parseReceipts(id, []catalogs.WriteReceipt{{Metadata: raw}}); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("v1 receipt with a replace: %v", err)
	}
	if err := p.Discard(ctx, id, append(receipts, plain)); err != nil {
		t.Fatal(err)
	}
}

// TestAssignIDs covers nested types and promotions.
func TestAssignIDs(t *testing.T) {
	cur := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "a", Type: ice.PrimitiveTypes.Int32, Required: true, Doc: "kept doc"},
		ice.NestedField{ID: 2, Name: "s", Type: &ice.StructType{FieldList: []ice.NestedField{
			{ID: 3, Name: "x", Type: ice.PrimitiveTypes.String},
			{ID: 4, Name: "y", Type: ice.PrimitiveTypes.Float32},
		}}},
		ice.NestedField{ID: 5, Name: "l", Type: &ice.ListType{ElementID: 6, Element: ice.PrimitiveTypes.Int64}},
		ice.NestedField{ID: 7, Name: "narrow", Type: ice.PrimitiveTypes.Int64},
		ice.NestedField{ID: 8, Name: "opt", Type: ice.PrimitiveTypes.Int64},
	)
	want := ice.NewSchema(0,
		ice.NestedField{ID: 100, Name: "a", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 101, Name: "s", Type: &ice.StructType{FieldList: []ice.NestedField{
			{ID: 102, Name: "y", Type: ice.PrimitiveTypes.Float64},
			{ID: 103, Name: "z", Type: ice.PrimitiveTypes.Bool},
		}}},
		ice.NestedField{ID: 104, Name: "l", Type: &ice.ListType{ElementID: 105, Element: ice.PrimitiveTypes.String}},
		ice.NestedField{ID: 106, Name: "narrow", Type: ice.PrimitiveTypes.Int32},
		ice.NestedField{ID: 107, Name: "opt", Type: ice.PrimitiveTypes.Int64, Required: true},
	)
	got := assignIDs(want, cur, 9)
	ids := map[string]int{}
	var walk func(prefix string, fs []ice.NestedField)
	walk = func(prefix string, fs []ice.NestedField) {
		for _, f := range fs {
			ids[prefix+f.Name] = f.ID
			walk(prefix+f.Name+".", children(f.Type))
		}
	}
	walk("", got.Fields())
	wantIDs := map[string]int{"a": 1, "s": 2, "s.y": 4, "s.z": 10, "l": 5, "l.element": 11, "narrow": 12, "opt": 8}
	if fmt.Sprint(ids) != fmt.Sprint(wantIDs) {
		t.Errorf("ids %v, want %v", ids, wantIDs)
	}
	if a, _ := got.FindFieldByName("a"); a.Doc != "kept doc" || !a.Required {
		t.Errorf("a = %+v: doc or required lost", a)
	}
	if o, _ := got.FindFieldByName("opt"); o.Required {
		t.Error("an optional column became required")
	}
	if !assignIDs(cur, cur, 9).Equals(cur) {
		t.Error("a schema numbered against itself changed")
	}
}
