package iceberg_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// wide has a column of every Arrow type the backend maps, in the client's
// spelling (the table stores the canonical Iceberg type).
var wide = arrow.NewSchema([]arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: false},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts_s", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true},
	{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "tstz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tstz_ny", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "America/New_York"}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "pt", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: false},
		arrow.Field{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
}, nil)

const wideRows = `[
 {"i8": -8, "i16": 300, "i32": 7, "i64": 9000000000, "u8": 200, "u32": 4000000000, "f32": 1.5, "f64": 2.25,
  "s": "a", "ls": "large", "bin": "aGk=", "ok": true, "dec": "12.34", "d": "2024-02-29",
  "ts_s": "2024-01-02T03:04:05", "ts_ms": "2024-01-02T03:04:05.123", "ts_us": "2024-01-02T03:04:05.123456",
  "ts_ns": "2024-01-02T03:04:05.123456789", "tstz": "2024-01-02T03:04:05Z", "tstz_ny": "2024-01-02T03:04:05.5Z",
  "tags": [1, 2, 3], "pt": {"x": 1.0, "label": "p"}, "attrs": [{"key": "k", "value": 1}]},
 {"i8": null, "i16": null, "i32": 8, "i64": null, "u8": null, "u32": null, "f32": null, "f64": null,
  "s": null, "ls": null, "bin": null, "ok": null, "dec": null, "d": null,
  "ts_s": null, "ts_ms": null, "ts_us": null, "ts_ns": null, "tstz": null, "tstz_ny": null,
  "tags": null, "pt": null, "attrs": null}
]`

func TestWideSchemaRoundTrip(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "wide"}
	// The row's ts_ns has digits below a microsecond: a v2 table takes
	// them only with the truncation property (TestNanosecondTimestamps).
	spec, err := p.CreateTable(ctx, id, wide, map[string]string{iceberg.PropTruncateNanos: "true"})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	want := map[string]string{
		"i8": "int32", "i16": "int32", "u8": "int32", "u32": "int64", "ls": "utf8",
		"dec": "decimal(10, 2)", "ts_s": "timestamp[us]", "ts_ns": "timestamp[us]",
		"tstz_ny": "timestamp[us, tz=UTC]", "tags": "list<element: int32", "attrs": "map<utf8, int64",
	}
	ids := map[int32]bool{}
	for _, f := range spec.SchemaSpec.Fields {
		if ids[f.ID] {
			t.Errorf("field id %d used twice", f.ID)
		}
		ids[f.ID] = true
		if w, ok := want[f.Name]; ok && !strings.HasPrefix(f.DataType.String(), w) {
			t.Errorf("column %s stored as %s, want %s", f.Name, f.DataType, w)
		}
		if f.Name == "i32" && f.Nullable {
			t.Error("i32 became nullable")
		}
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, wide, strings.NewReader(wideRows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	r, err := p.WriteBatch(ctx, id, rec)
	if err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	res, err := p.Scan(ctx, id, catalogs.ScanRequest{Columns: []string{"i8", "u32", "ts_ns", "tstz_ny", "dec", "attrs"},
		Filters: []catalogs.Filter{{Column: "i32", Op: catalogs.OpEq, Values: []any{int32(7)}}}})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	defer res.Reader.Release()
	var got []string
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		for c := range int(b.NumCols()) {
			for row := range int(b.NumRows()) {
				got = append(got, b.ColumnName(c)+"="+b.Column(c).ValueStr(row))
			}
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"i8=-8", "u32=4000000000", "ts_ns=2024-01-02T03:04:05.123456", "tstz_ny=2024-01-02T03:04:05.5", "dec=12.34"} {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("scan result %v lacks %s", got, w)
		}
	}
}

func TestCreateTableRejectsTypes(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	cases := map[string]arrow.DataType{
		"u64":      arrow.PrimitiveTypes.Uint64,
		"half":     arrow.FixedWidthTypes.Float16,
		"dur":      arrow.FixedWidthTypes.Duration_ms,
		"interval": arrow.FixedWidthTypes.DayTimeInterval,
		"nothing":  arrow.Null,
		"dict":     &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String},
		"nested":   arrow.ListOf(arrow.PrimitiveTypes.Uint64),
		"t32":      arrow.FixedWidthTypes.Time32ms,
	}
	for col, dt := range cases {
		sc := arrow.NewSchema([]arrow.Field{{Name: "fine", Type: arrow.PrimitiveTypes.Int64}, {Name: col, Type: dt}}, nil)
		_, err := p.CreateTable(ctx, catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t_" + col}, sc, nil)
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), col) {
			t.Errorf("CreateTable with %s column = %v, want ErrInvalidArgument naming %q", dt, err, col)
		}
	}
	dup := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := p.CreateTable(ctx, catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "dup"}, dup, nil); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("duplicate column: %v", err)
	}
	_, err := p.CreateTable(ctx, catalogs.TableIdent{Catalog: "lake", Namespace: []string{"nope"}, Name: "x"},
		arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil), nil)
	if !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("CreateTable in a missing namespace = %v, want ErrNotFound", err)
	}
}

// TestNanosecondTimestamps: a v2 table refuses a nanosecond value that
// would lose digits, naming the column and the value, and takes one
// without sub-microsecond digits.
func TestNanosecondTimestamps(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "tz", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	batch := func(ts string) arrow.RecordBatch {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(
			`[{"id": 1, "ts": "`+ts+`", "tz": "`+ts+`Z"}, {"id": 2, "ts": null, "tz": null}]`))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	write := func(id catalogs.TableIdent, ts string) error {
		rec := batch(ts)
		defer rec.Release()
		r, err := p.WriteBatch(ctx, id, rec)
		if err != nil {
			return err
		}
		_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{r})
		return err
	}
	read := func(id catalogs.TableIdent) []string {
		res, err := p.Scan(ctx, id, catalogs.ScanRequest{Columns: []string{"ts", "tz"},
			Filters: []catalogs.Filter{{Column: "id", Op: catalogs.OpEq, Values: []any{int64(1)}}}})
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		defer res.Reader.Release()
		var got []string
		for res.Reader.Next() {
			b := res.Reader.RecordBatch()
			for c := range int(b.NumCols()) {
				got = append(got, b.Column(c).DataType().String()+" "+b.Column(c).ValueStr(0))
			}
		}
		if err := res.Reader.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	const fine = "2024-01-02T03:04:05.123456789"

	v2 := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "ns_v2"}
	if _, err := p.CreateTable(ctx, v2, sc, nil); err != nil {
		t.Fatalf("create v2: %v", err)
	}
	err := write(v2, fine)
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), `column "ts"`) ||
		!strings.Contains(err.Error(), "2024-01-02T03:04:05.123456789") {
		t.Fatalf("v2 write of nanoseconds = %v, want InvalidArgument naming column ts and the value", err)
	}
	if err := write(v2, "2024-01-02T03:04:05.123456"); err != nil {
		t.Fatalf("v2 write of whole microseconds in a ns batch: %v", err)
	}
	if got := strings.Join(read(v2), "; "); !strings.Contains(got, "timestamp[us] 2024-01-02T03:04:05.123456") {
		t.Errorf("v2 read back %q", got)
	}
}
