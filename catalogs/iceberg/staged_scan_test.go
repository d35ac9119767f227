package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"

	"github.com/flightgw/flightgw/catalogs"
)

// TestScanStaged: a transaction's view of a table whose schema evolved
// between its two staged writes reads the committed rows (ids 0-19, two
// files) and both staged files (ids 100-104 written before the column
// "extra" was added, 200-202 after), with Scan's projection, column
// order and filters, committed files pruned by their statistics and the
// staged ones filtered row by row; an overwrite reads the staged files
// alone. Nothing is committed by reading.
func TestScanStaged(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	b := idBatch(100, 5)
	before, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
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
	after := extraReceipt(t, p, id, 200, 3)
	staged := []catalogs.WriteReceipt{before, after}
	ge := func(v int64) []catalogs.Filter {
		return []catalogs.Filter{{Column: "id", Op: catalogs.OpGtEq, Values: []any{v}}}
	}
	newExtra := []string{"v200", "v201", "v202"}

	for _, c := range []struct {
		name      string
		req       catalogs.ScanRequest
		overwrite bool
		fields    []string
		ids       []string
		extra     []string // sorted
		planned   int
		total     int
	}{
		{name: "append", fields: []string{"id", "extra"}, ids: idRange(0, 20, 100, 105, 200, 203),
			extra: append(nulls(25), newExtra...), planned: 4, total: 4},
		{name: "projected and filtered", req: catalogs.ScanRequest{Columns: []string{"extra", "id"}, Filters: ge(101)},
			fields: []string{"extra", "id"}, ids: idRange(101, 105, 200, 203), extra: append(nulls(4), newExtra...),
			planned: 2, total: 4},
		{name: "only the added column", req: catalogs.ScanRequest{Columns: []string{"extra"}},
			fields: []string{"extra"}, extra: append(nulls(25), newExtra...), planned: 4, total: 4},
		{name: "overwrite", overwrite: true, fields: []string{"id", "extra"}, ids: idRange(100, 105, 200, 203),
			extra: append(nulls(5), newExtra...), planned: 2, total: 2},
		{name: "overwrite filtered", overwrite: true, req: catalogs.ScanRequest{Filters: ge(200)},
			fields: []string{"id", "extra"}, ids: idRange(200, 203), extra: newExtra, planned: 2, total: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, res := readScan(t, c.req, func(ctx context.Context) (*catalogs.ScanResult, error) {
				return p.ScanStaged(ctx, id, c.req, staged, c.overwrite)
			})
			if !reflect.DeepEqual(got.fields, c.fields) {
				t.Errorf("fields %v, want %v", got.fields, c.fields)
			}
			if c.ids != nil && !reflect.DeepEqual(sorted(got.values["id"]), sorted(c.ids)) {
				t.Errorf("ids %v, want %v", got.values["id"], c.ids)
			}
			if !reflect.DeepEqual(sorted(got.values["extra"]), sorted(c.extra)) {
				t.Errorf("extra %v, want %v", got.values["extra"], c.extra)
			}
			if res.FilesPlanned != c.planned || res.FilesTotal != c.total {
				t.Errorf("files %d of %d, want %d of %d", res.FilesPlanned, res.FilesTotal, c.planned, c.total)
			}
		})
	}
	if n := scanAll(t, p, id, catalogs.ScanRequest{}).rows; n != 20 {
		t.Errorf("committed rows after the staged scans = %d, want 20", n)
	}

	for _, c := range []struct {
		name   string
		req    catalogs.ScanRequest
		staged []catalogs.WriteReceipt
		kind   error
		says   string
	}{
		{"a snapshot", catalogs.ScanRequest{SnapshotID: new(int64)}, staged, catalogs.ErrInvalidArgument, "no snapshot"},
		{"a missing column", catalogs.ScanRequest{Columns: []string{"nope"}}, staged, catalogs.ErrInvalidArgument, `"nope"`},
		{"a foreign receipt", catalogs.ScanRequest{}, []catalogs.WriteReceipt{{Metadata: []byte("{}")}}, catalogs.ErrInvalidArgument, "receipt 0"},
		{"a replace of the schema", catalogs.ScanRequest{}, []catalogs.WriteReceipt{schemaReplace(t, before)}, catalogs.ErrFailedPrecondition, "commit the transaction first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.ScanStaged(ctx, id, c.req, c.staged, false)
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), id.String()) {
				t.Errorf("ScanStaged: %v, want %v naming %s and saying %q", err, c.kind, id, c.says)
			}
		})
	}
}

// extraReceipt stages ids from..from+n-1 with extra = "v<id>", uncommitted.
func extraReceipt(t *testing.T, p *Provider, id catalogs.TableIdent, from, n int64) catalogs.WriteReceipt {
	t.Helper()
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
	defer rec.Release()
	r, err := p.WriteBatch(context.Background(), id, rec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// idRange is the ids of the half-open ranges [lo, hi) given in pairs, as
// strings.
func idRange(bounds ...int64) []string {
	var out []string
	for i := 0; i+1 < len(bounds); i += 2 {
		for v := bounds[i]; v < bounds[i+1]; v++ {
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// schemaReplace is r made the receipt of a replace with a new schema (one
// column "id"), as ReplaceSchema stages it.
func schemaReplace(t *testing.T, r catalogs.WriteReceipt) catalogs.WriteReceipt {
	t.Helper()
	var rm receiptMeta
	if err := json.Unmarshal(r.Metadata, &rm); err != nil {
		t.Fatal(err)
	}
	sc, err := json.Marshal(ice.NewSchema(1, ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true}))
	if err != nil {
		t.Fatal(err)
	}
	rm.Format, rm.Replace = replaceFormat, &replaceMeta{Schema: sc}
	if r.Metadata, err = json.Marshal(rm); err != nil {
		t.Fatal(err)
	}
	return r
}
