package delta

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// A schema with every type and column mapping metadata, as Spark writes it.
const fullSchema = `{"type":"struct","fields":[
 {"name":"s","type":"string","nullable":true,"metadata":{}},
 {"name":"l","type":"long","nullable":false,"metadata":{}},
 {"name":"i","type":"integer","nullable":true,"metadata":{}},
 {"name":"sh","type":"short","nullable":true,"metadata":{}},
 {"name":"b","type":"byte","nullable":true,"metadata":{}},
 {"name":"f","type":"float","nullable":true,"metadata":{}},
 {"name":"d","type":"double","nullable":true,"metadata":{}},
 {"name":"bo","type":"boolean","nullable":true,"metadata":{}},
 {"name":"bi","type":"binary","nullable":true,"metadata":{}},
 {"name":"da","type":"date","nullable":true,"metadata":{}},
 {"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
 {"name":"dec","type":"decimal(38,10)","nullable":true,"metadata":{}},
 {"name":"v","type":"void","nullable":true,"metadata":{}},
 {"name":"e","type":{"type":"array","elementType":{"type":"struct","fields":[
   {"name":"d","type":"integer","nullable":false,"metadata":{"delta.columnMapping.id":5,"delta.columnMapping.physicalName":"col-a7f4"}}]},
   "containsNull":true},"nullable":true,"metadata":{"delta.columnMapping.id":4,"delta.columnMapping.physicalName":"col-5f42"}},
 {"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"long","containsNull":false},"valueContainsNull":true},"nullable":true,"metadata":{"comment":"x"}}
]}`

func TestSchemaRoundTripAndArrow(t *testing.T) {
	s, err := ParseSchema(fullSchema)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := s.SchemaString()
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal([]byte(enc), &a)
	_ = json.Unmarshal([]byte(fullSchema), &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip\n%s", enc)
	}

	logical, err := ArrowSchema(s, LogicalNames)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"utf8", "int64", "int32", "int16", "int8", "float32", "float64", "bool", "binary", "date32",
		"timestamp[us, tz=UTC]", "timestamp[us]", "decimal(38, 10)", "null"}
	for i, w := range want {
		if got := logical.Field(i).Type.String(); got != w {
			t.Errorf("column %s: %s, want %s", logical.Field(i).Name, got, w)
		}
	}
	if logical.Field(1).Nullable {
		t.Error("l is not nullable")
	}
	phys, err := ArrowSchema(s, PhysicalNames)
	if err != nil {
		t.Fatal(err)
	}
	e := phys.Field(14)
	if e.Name != "col-5f42" {
		t.Errorf("physical name %q", e.Name)
	}
	if id, ok := e.Metadata.GetValue(FieldIDKey); !ok || id != "4" {
		t.Errorf("field id %q %v", id, ok)
	}
	inner := e.Type.(*arrow.ListType).ElemField().Type.(*arrow.StructType).Field(0)
	if inner.Name != "col-a7f4" || inner.Nullable {
		t.Errorf("nested physical field %+v", inner)
	}
	if id, _ := inner.Metadata.GetValue(FieldIDKey); id != "5" {
		t.Errorf("nested field id %q", id)
	}
	m := logical.Field(15).Type.(*arrow.MapType)
	if !m.ItemField().Nullable || m.ItemType().(*arrow.ListType).ElemField().Nullable {
		t.Errorf("map nullability %s", m)
	}

	// Arrow back to Delta gives the same types (names and nullability, not metadata).
	back, err := FromArrow(logical)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range back.Fields {
		if f.Type.String() != s.Fields[i].Type.String() || f.Nullable != s.Fields[i].Nullable {
			t.Errorf("column %s: %s nullable=%v, want %s nullable=%v", f.Name, f.Type, f.Nullable, s.Fields[i].Type, s.Fields[i].Nullable)
		}
	}
}

func TestFromArrowConversions(t *testing.T) {
	ok := []struct {
		t    arrow.DataType
		want string
	}{
		{arrow.PrimitiveTypes.Uint8, "short"},
		{arrow.PrimitiveTypes.Uint16, "integer"},
		{arrow.PrimitiveTypes.Uint32, "long"},
		{arrow.BinaryTypes.LargeString, "string"},
		{arrow.BinaryTypes.StringView, "string"},
		{arrow.BinaryTypes.LargeBinary, "binary"},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Paris"}, "timestamp"},
		{&arrow.TimestampType{Unit: arrow.Second}, "timestamp_ntz"},
		{&arrow.Decimal256Type{Precision: 38, Scale: 2}, "decimal(38,2)"},
		{arrow.LargeListOf(arrow.PrimitiveTypes.Int32), "array<integer>"},
	}
	for _, c := range ok {
		s, err := FromArrow(arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.t}}, nil))
		if err != nil || s.Fields[0].Type.String() != c.want {
			t.Errorf("%s: %v %v, want %s", c.t, s, err, c.want)
		}
	}
	refused := []arrow.DataType{
		arrow.PrimitiveTypes.Uint64,
		&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"},
		&arrow.Decimal256Type{Precision: 40, Scale: 2},
		arrow.FixedWidthTypes.Time64us,
		arrow.FixedWidthTypes.Date64,
		arrow.StructOf(arrow.Field{Name: "x", Type: arrow.FixedWidthTypes.Duration_s}),
	}
	for _, rt := range refused {
		_, err := FromArrow(arrow.NewSchema([]arrow.Field{{Name: "col", Type: rt}}, nil))
		if err == nil {
			t.Errorf("%s accepted", rt)
		} else if !strings.Contains(err.Error(), `"col`) {
			t.Errorf("%s: error %q does not name the column", rt, err)
		}
	}
}

func TestParseSchemaMalformed(t *testing.T) {
	deep := `"long"`
	for i := 0; i < 100; i++ {
		deep = `{"type":"array","elementType":` + deep + `,"containsNull":true}`
	}
	cases := map[string]string{
		"not a struct":        `"long"`,
		"unknown type":        `{"type":"struct","fields":[{"name":"a","type":"int128","nullable":true}]}`,
		"decimal too wide":    `{"type":"struct","fields":[{"name":"a","type":"decimal(39,0)","nullable":true}]}`,
		"scale over prec":     `{"type":"struct","fields":[{"name":"a","type":"decimal(5,6)","nullable":true}]}`,
		"case duplicate":      `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true},{"name":"A","type":"long","nullable":true}]}`,
		"no nullable":         `{"type":"struct","fields":[{"name":"a","type":"long"}]}`,
		"array without flag":  `{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"long"},"nullable":true}]}`,
		"map without value":   `{"type":"struct","fields":[{"name":"a","type":{"type":"map","keyType":"long","valueContainsNull":true},"nullable":true}]}`,
		"nested too deep":     `{"type":"struct","fields":[{"name":"a","type":` + deep + `,"nullable":true}]}`,
		"not json":            `{"type":`,
		"fields not an array": `{"type":"struct","fields":{}}`,
	}
	for name, s := range cases {
		if _, err := ParseSchema(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	s, err := ParseSchema(`{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ArrowSchema(s, LogicalNames); err == nil {
		t.Error("variant mapped to Arrow")
	}
	bad, _ := ParseSchema(`{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":"x"}}]}`)
	if _, err := ArrowSchema(bad, PhysicalNames); !errors.Is(err, ErrMalformed) {
		t.Errorf("non-integer column mapping id: %v", err)
	}
}

func str(s string) *string { return &s }

func TestPartitionValues(t *testing.T) {
	dec := &PrimitiveType{Name: "decimal", Precision: 10, Scale: 2}
	cases := []struct {
		typ  string
		in   *string
		want PartitionValue
		out  *string // serialized again; nil for null
	}{
		{"string", nil, nil, nil},
		{"string", str(""), nil, nil}, // empty is null, for every type
		{"long", str(""), nil, nil},
		{"string", str("a=b/c%20 ü"), "a=b/c%20 ü", str("a=b/c%20 ü")},
		{"integer", str("-42"), int32(-42), str("-42")},
		{"byte", str("127"), int8(127), str("127")},
		{"short", str("-32768"), int16(-32768), str("-32768")},
		{"long", str("9223372036854775807"), int64(math.MaxInt64), str("9223372036854775807")},
		{"double", str("1.0E10"), 1e10, str("1e+10")},
		{"double", str("NaN"), math.NaN(), str("NaN")},
		{"double", str("-Infinity"), math.Inf(-1), str("-Infinity")},
		{"float", str("Infinity"), float32(math.Inf(1)), str("Infinity")},
		{"boolean", str("true"), true, str("true")},
		{"date", str("1970-01-01"), Date(0), str("1970-01-01")},
		{"date", str("1969-12-31"), Date(-1), str("1969-12-31")},
		{"date", str("2020-02-29"), Date(18321), str("2020-02-29")},
		{"timestamp", str("1970-01-01 00:00:00"), Timestamp(0), str("1970-01-01T00:00:00.000000Z")},
		{"timestamp", str("1970-01-01 00:00:00.123456"), Timestamp(123456), str("1970-01-01T00:00:00.123456Z")},
		{"timestamp", str("1970-01-01T00:00:00.123456Z"), Timestamp(123456), str("1970-01-01T00:00:00.123456Z")},
		{"timestamp", str("1970-01-01T01:00:00+01:00"), Timestamp(0), str("1970-01-01T00:00:00.000000Z")},
		{"timestamp_ntz", str("2024-01-01 00:00:01.5"), Timestamp(1704067201500000), str("2024-01-01 00:00:01.500000")},
		{"binary", str("\u0001\u0002\u0003"), []byte{1, 2, 3}, str("\u0001\u0002\u0003")},
	}
	for _, c := range cases {
		typ, _ := parsePrimitive(c.typ)
		got, err := ParsePartitionValue(typ, c.in)
		if err != nil {
			t.Errorf("%s %v: %v", c.typ, c.in, err)
			continue
		}
		if f, ok := c.want.(float64); ok && math.IsNaN(f) {
			if g, ok := got.(float64); !ok || !math.IsNaN(g) {
				t.Errorf("%s: %v, want NaN", c.typ, got)
			}
		} else if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: %#v, want %#v", c.typ, *c.in, got, c.want)
		}
		out, err := FormatPartitionValue(typ, got)
		if err != nil || !reflect.DeepEqual(out, c.out) {
			t.Errorf("%s %#v formats to %v %v, want %v", c.typ, got, deref(out), err, deref(c.out))
		}
	}
	for in, want := range map[string]int64{"123.45": 12345, "-0.5": -50, "1E-2": 1, "7": 700, "1.2E+3": 120000} {
		got, err := ParsePartitionValue(dec, str(in))
		if err != nil || got.(decimal128.Num) != decimal128.FromI64(want) {
			t.Errorf("decimal %s: %v %v, want %d", in, got, err, want)
		}
	}
	if out, _ := FormatPartitionValue(dec, decimal128.FromI64(-5)); *out != "-0.05" {
		t.Errorf("decimal -5 at scale 2 formats to %s", *out)
	}
	bad := map[string]string{
		"integer": "2147483648", "byte": "1.0", "boolean": "TRUE", "date": "2020-2-29",
		"timestamp_ntz": "2024-01-01T00:00:00Z", "long": " 1",
	}
	for typ, in := range bad {
		p, _ := parsePrimitive(typ)
		if _, err := ParsePartitionValue(p, str(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s %q: %v, want ErrMalformed", typ, in, err)
		}
	}
	for _, in := range []string{"123.456", "123456789.1", "1/2", "x"} {
		if _, err := ParsePartitionValue(dec, str(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("decimal(10,2) %q accepted", in)
		}
	}
	if _, err := FormatPartitionValue(prim("binary"), []byte{0xff}); err == nil {
		t.Error("non-UTF-8 binary partition value formatted")
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func TestPartitionDir(t *testing.T) {
	got := PartitionDir([]string{"p", "q", "r"}, map[string]*string{"p": str("a=b/c%d e:ü"), "q": nil, "r": str("")})
	want := "p=a%3Db%2Fc%25d e%3Aü/q=" + HiveNull + "/r=" + HiveNull
	if got != want {
		t.Errorf("%q, want %q", got, want)
	}
	// The add path is the directory URI-escaped again, as deltalake writes it.
	if p := EncodePath(PartitionDir([]string{"p"}, map[string]*string{"p": str("a/b")}) + "/f.parquet"); p != "p=a%252Fb/f.parquet" {
		t.Errorf("add path %q", p)
	}
}
