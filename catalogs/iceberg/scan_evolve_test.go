package iceberg

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"

	"github.com/flightgw/flightgw/catalogs"
)

// evolvedTable is planTable (ids 0..19 in two files) with a nullable string
// column "extra" added afterwards.
func evolvedTable(t *testing.T) (*Provider, catalogs.TableIdent) {
	t.Helper()
	ctx := context.Background()
	p, id, _ := planTable(t)
	tbl, err := p.cat.LoadTable(ctx, []string{"default", "t"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, ice.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return p, id
}

// appendExtra commits ids from..from+n-1 with extra = "v<id>".
func appendExtra(t *testing.T, p *Provider, id catalogs.TableIdent, from, n int64) {
	t.Helper()
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i))
	}
	rec := b.NewRecordBatch()
	r, err := p.WriteBatch(ctx, id, rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
}

// scanResult is what a scan returned: the reader's schema, the number of
// rows, and every column's values as strings ("<null>" for nulls).
type scanResult struct {
	fields []string
	rows   int64
	values map[string][]string
}

// scanAll scans with a checked allocator in the context and fails the test
// if anything the scan allocated outlives the reader.
func scanAll(t *testing.T, p *Provider, id catalogs.TableIdent, req catalogs.ScanRequest) scanResult {
	t.Helper()
	out, _ := readScan(t, req, func(ctx context.Context) (*catalogs.ScanResult, error) { return p.Scan(ctx, id, req) })
	return out
}

// readScan reads the result of scan (Scan or ScanStaged of req) as
// scanAll does, and returns it with the result's file counts.
func readScan(t *testing.T, req catalogs.ScanRequest, scan func(context.Context) (*catalogs.ScanResult, error)) (scanResult, *catalogs.ScanResult) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	ctx := compute.WithAllocator(context.Background(), mem)
	res, err := scan(ctx)
	if err != nil {
		t.Fatalf("Scan(%+v): %v", req, err)
	}
	out := scanResult{values: map[string][]string{}}
	for _, f := range res.Reader.Schema().Fields() {
		out.fields = append(out.fields, f.Name)
	}
	for res.Reader.Next() {
		rec := res.Reader.RecordBatch()
		if !rec.Schema().Equal(res.Reader.Schema()) {
			t.Errorf("batch schema %s differs from the reader's %s", rec.Schema(), res.Reader.Schema())
		}
		out.rows += rec.NumRows()
		for i, f := range rec.Schema().Fields() {
			col := rec.Column(i)
			if int64(col.Len()) != rec.NumRows() {
				t.Errorf("column %s has %d values in a batch of %d rows", f.Name, col.Len(), rec.NumRows())
			}
			for j := 0; j < col.Len(); j++ {
				v := "<null>"
				if col.IsValid(j) {
					v = col.ValueStr(j)
				}
				out.values[f.Name] = append(out.values[f.Name], v)
			}
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatalf("Scan(%+v): read: %v", req, err)
	}
	res.Reader.Release()
	mem.AssertSize(t, 0)
	return out, res
}

func nulls(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "<null>"
	}
	return out
}

func sorted(v []string) []string {
	out := append([]string(nil), v...)
	sort.Strings(out)
	return out
}

func TestScanOnlyAddedColumn(t *testing.T) {
	p, id := evolvedTable(t)
	got := scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"extra"}})
	if !reflect.DeepEqual(got.fields, []string{"extra"}) {
		t.Fatalf("columns %v, want [extra]", got.fields)
	}
	if got.rows != 20 || !reflect.DeepEqual(got.values["extra"], nulls(20)) {
		t.Fatalf("%d rows, extra = %v; want 20 nulls", got.rows, got.values["extra"])
	}

	// After rows with values are appended, they come back beside the
	// nulls of the older files.
	appendExtra(t, p, id, 20, 3)
	got = scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"extra"}})
	want := sorted(append(nulls(20), "v20", "v21", "v22"))
	if !reflect.DeepEqual(got.fields, []string{"extra"}) || got.rows != 23 || !reflect.DeepEqual(sorted(got.values["extra"]), want) {
		t.Fatalf("got %v, %d rows, extra = %v; want [extra], 23 rows, %v", got.fields, got.rows, got.values["extra"], want)
	}

	// A filter on an old column still works with the new column alone.
	got = scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"extra"},
		Filters: []catalogs.Filter{{Column: "id", Op: catalogs.OpGtEq, Values: []any{int64(15)}}}})
	if !reflect.DeepEqual(got.fields, []string{"extra"}) || got.rows < 8 {
		t.Fatalf("filtered: got %v, %d rows; want [extra], at least the 8 matching rows", got.fields, got.rows)
	}
	for _, v := range []string{"v20", "v21", "v22"} {
		if !contains(got.values["extra"], v) {
			t.Fatalf("filtered: extra = %v, missing %s", got.values["extra"], v)
		}
	}
	// A filter on the new column alone.
	got = scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"extra"},
		Filters: []catalogs.Filter{{Column: "extra", Op: catalogs.OpNotNull}}})
	if !reflect.DeepEqual(got.fields, []string{"extra"}) || !reflect.DeepEqual(sorted(got.values["extra"]), []string{"v20", "v21", "v22"}) {
		t.Fatalf("not-null filter: got %v, extra = %v; want [extra], v20..v22", got.fields, got.values["extra"])
	}

	// Both columns, in the requested order.
	got = scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"extra", "id"}})
	if !reflect.DeepEqual(got.fields, []string{"extra", "id"}) || got.rows != 23 {
		t.Fatalf("both: got %v, %d rows; want [extra id], 23 rows", got.fields, got.rows)
	}
	for i, v := range got.values["id"] {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		want := "<null>"
		if n >= 20 {
			want = "v" + v
		}
		if e := got.values["extra"][i]; e != want {
			t.Fatalf("row %d: id %s, extra %s, want %s", i, v, e, want)
		}
	}
}

// TestScanOnlyAddedColumnSnapshot reads the new column alone at an older
// snapshot that has files from before and after the change.
func TestScanOnlyAddedColumnSnapshot(t *testing.T) {
	p, id := evolvedTable(t)
	appendExtra(t, p, id, 20, 3)
	tbl, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot().SnapshotID
	appendExtra(t, p, id, 23, 2)
	got := scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"extra"}, SnapshotID: &snap})
	want := sorted(append(nulls(20), "v20", "v21", "v22"))
	if !reflect.DeepEqual(got.fields, []string{"extra"}) || !reflect.DeepEqual(sorted(got.values["extra"]), want) {
		t.Fatalf("got %v, extra = %v; want [extra], %v", got.fields, got.values["extra"], want)
	}
}

// TestAnchorColumn: the anchor is the cheapest column every schema has.
func TestAnchorColumn(t *testing.T) {
	ctx := context.Background()
	p, _, _ := planTable(t)
	sc := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "name", Type: ice.PrimitiveTypes.String},
		ice.NestedField{ID: 2, Name: "n", Type: ice.PrimitiveTypes.Int64},
		ice.NestedField{ID: 3, Name: "flag", Type: ice.PrimitiveTypes.Bool},
	)
	tbl, err := p.cat.CreateTable(ctx, []string{"default", "a"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	md := tbl.Metadata()
	if got := anchorColumn(md, md.CurrentSchema(), []string{"name"}); got != "" {
		t.Errorf("one schema, [name]: anchor %q, want none", got)
	}
	if got := anchorColumn(md, md.CurrentSchema(), []string{}); got != "flag" {
		t.Errorf("no columns: anchor %q, want flag", got)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"b"}, ice.PrimitiveTypes.Bool, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	md = tbl.Metadata()
	for _, c := range []struct {
		cols []string
		want string
	}{
		{[]string{"b"}, "flag"},
		{[]string{"b", "flag"}, ""},
		{[]string{"b", "name"}, ""},
		{[]string{"flag"}, ""},
		{[]string{}, "flag"},
	} {
		if got := anchorColumn(md, md.CurrentSchema(), c.cols); got != c.want {
			t.Errorf("%v: anchor %q, want %q", c.cols, got, c.want)
		}
	}
}

// TestScanNoColumns: an empty (non-nil) projection returns batches without
// columns that still count the rows.
func TestScanNoColumns(t *testing.T) {
	p, id := evolvedTable(t)
	appendExtra(t, p, id, 20, 3)
	got := scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{}})
	if len(got.fields) != 0 || got.rows != 23 {
		t.Fatalf("got %v, %d rows; want no columns, 23 rows", got.fields, got.rows)
	}
	got = scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{},
		Filters: []catalogs.Filter{{Column: "id", Op: catalogs.OpGtEq, Values: []any{int64(20)}}}})
	if len(got.fields) != 0 || got.rows < 3 {
		t.Fatalf("filtered: got %v, %d rows; want no columns, at least 3 rows", got.fields, got.rows)
	}
	// nil still reads every column.
	got = scanAll(t, p, id, catalogs.ScanRequest{})
	if !reflect.DeepEqual(got.fields, []string{"id", "extra"}) || got.rows != 23 {
		t.Fatalf("nil: got %v, %d rows; want [id extra], 23 rows", got.fields, got.rows)
	}
}

// TestScanColumnsUnevolved: on a table whose schema never changed the
// projection is passed through as it is.
func TestScanColumnsUnevolved(t *testing.T) {
	p, id, _ := planTable(t)
	got := scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"id"}})
	if !reflect.DeepEqual(got.fields, []string{"id"}) || got.rows != 20 {
		t.Fatalf("got %v, %d rows; want [id], 20 rows", got.fields, got.rows)
	}
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
