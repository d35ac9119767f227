package iceberg

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

var nanSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "all_nan", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "pt", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), Nullable: true},
	{Name: "xs", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
}, nil)

// JSON has no NaN: the batch is built with NaN where the JSON says 999
// (floats) and then patched.
const nanRows = `[
 {"id": 1, "f64": 999, "f32": 1.5, "all_nan": 999, "pt": {"x": 999}, "xs": [999, 2.5, 999]},
 {"id": 2, "f64": -3.5, "f32": 999, "all_nan": 999, "pt": null, "xs": null},
 {"id": 3, "f64": null, "f32": null, "all_nan": null, "pt": {"x": 4.0}, "xs": [999]},
 {"id": 4, "f64": 7.25, "f32": -2, "all_nan": 999, "pt": {"x": null}, "xs": []}
]`

// nanBatch is nanRows with every 999 turned into NaN.
func nanBatch(t *testing.T) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, nanSchema, strings.NewReader(nanRows))
	if err != nil {
		t.Fatal(err)
	}
	var patch func(arrow.Array)
	patch = func(a arrow.Array) {
		switch c := a.(type) {
		case *array.Float64:
			for i, v := range c.Float64Values() {
				if v == 999 {
					c.Float64Values()[i] = math.NaN()
				}
			}
		case *array.Float32:
			for i, v := range c.Float32Values() {
				if v == 999 {
					c.Float32Values()[i] = float32(math.NaN())
				}
			}
		case *array.Struct:
			for i := range c.NumField() {
				patch(c.Field(i))
			}
		case *array.List:
			patch(c.ListValues())
		}
	}
	for _, c := range rec.Columns() {
		patch(c)
	}
	return rec
}

// TestStreamFileMetrics checks the Iceberg metrics of the files an
// upload writes: NaN counts of every float leaf (at any depth, counting
// only stored values), bounds that never hold NaN, and the null and value
// counts.
func TestStreamFileMetrics(t *testing.T) {
	ctx := context.Background()
	p, err := OpenEmbedded(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "nans"}
	if _, err := p.CreateTable(ctx, id, nanSchema, nil); err != nil {
		t.Fatal(err)
	}
	s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b := nanBatch(t)
		err := s.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	rs, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rms, err := parseReceipts(id, rs)
	if err != nil {
		t.Fatal(err)
	}
	files, err := dataFiles(id, tbl.Metadata(), rms)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("%d files, want 1", len(files))
	}
	df := files[0]
	sc := tbl.Schema()
	fid := func(name string) int {
		f, ok := sc.FindFieldByName(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		return f.ID
	}
	// Per batch: f64 1 NaN, f32 1, all_nan 3, pt.x 1 (row 1), xs.element
	// 3 (rows 1 and 3); two batches.
	wantNaN := map[string]int64{"f64": 2, "f32": 2, "all_nan": 6, "pt.x": 2, "xs.element": 6}
	for name, want := range wantNaN {
		if got, ok := df.NaNValueCounts()[fid(name)]; !ok || got != want {
			t.Errorf("nan count of %s = %d (set %v), want %d", name, got, ok, want)
		}
	}
	if _, ok := df.NaNValueCounts()[fid("id")]; ok {
		t.Errorf("nan count for the long column id: %v", df.NaNValueCounts())
	}
	wantNull := map[string]int64{"id": 0, "f64": 2, "f32": 2, "all_nan": 2}
	for name, want := range wantNull {
		if got := df.NullValueCounts()[fid(name)]; got != want {
			t.Errorf("null count of %s = %d, want %d", name, got, want)
		}
	}
	if got := df.ValueCounts()[fid("f64")]; got != 8 {
		t.Errorf("value count of f64 = %d, want 8", got)
	}
	f64 := func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }
	lo, hi := df.LowerBoundValues()[fid("f64")], df.UpperBoundValues()[fid("f64")]
	if len(lo) != 8 || len(hi) != 8 || f64(lo) != -3.5 || f64(hi) != 7.25 {
		t.Errorf("f64 bounds = %v..%v, want -3.5..7.25 (no NaN)", lo, hi)
	}
	if l, ok := df.LowerBoundValues()[fid("id")]; !ok || int64(binary.LittleEndian.Uint64(l)) != 1 {
		t.Errorf("id lower bound = %v, want 1", l)
	}
	for _, name := range []string{"all_nan"} {
		if b, ok := df.LowerBoundValues()[fid(name)]; ok && math.IsNaN(f64(b)) {
			t.Errorf("%s has a NaN lower bound", name)
		}
	}
}
