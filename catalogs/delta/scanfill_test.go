package delta

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestFillStructFields: a data file's struct lacking fields the table
// added later reads with them null, at any depth and on a sliced array,
// its fields in the table's order; a struct with every field in order (or
// not a struct) is left as it is.
func TestFillStructFields(t *testing.T) {
	i32, str := arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String
	f := func(n string, t arrow.DataType) arrow.Field { return arrow.Field{Name: n, Type: t, Nullable: true} }
	inner := arrow.StructOf(f("x", i32))
	file := arrow.StructOf(f("a", i32), f("s", inner))
	fromJSON := func(dt arrow.DataType, js string) arrow.Array {
		a, _, err := array.FromJSON(memory.DefaultAllocator, dt, strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Release)
		return a
	}
	rows := fromJSON(file, `[{"a": 1, "s": {"x": 10}}, null, {"a": 3, "s": null}, {"a": 4, "s": {"x": 40}}]`)
	for _, tc := range []struct {
		name string
		in   arrow.Array
		want arrow.DataType
		out  string // the filled array's JSON; "" when left alone
	}{
		{"a field added", rows, arrow.StructOf(f("a", i32), f("s", inner), f("b", str)),
			`[{"a":1,"b":null,"s":{"x":10}},null,{"a":3,"b":null,"s":null},{"a":4,"b":null,"s":{"x":40}}]`},
		{"a nested field added", rows, arrow.StructOf(f("a", i32), f("s", arrow.StructOf(f("x", i32), f("y", str)))),
			`[{"a":1,"s":{"x":10,"y":null}},null,{"a":3,"s":null},{"a":4,"s":{"x":40,"y":null}}]`},
		{"sliced", array.NewSlice(rows, 2, 4), arrow.StructOf(f("a", i32), f("s", inner), f("b", str)),
			`[{"a":3,"b":null,"s":null},{"a":4,"b":null,"s":{"x":40}}]`},
		{"reordered", rows, arrow.StructOf(f("s", inner), f("a", i32)),
			`[{"a":1,"s":{"x":10}},null,{"a":3,"s":null},{"a":4,"s":{"x":40}}]`},
		{"every field there", rows, file, ""},
		{"not a struct", fromJSON(i32, `[1]`), arrow.PrimitiveTypes.Int64, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "sliced" {
				defer tc.in.Release()
			}
			got := fillStructFields(tc.in, tc.want)
			if tc.out == "" {
				if got != nil {
					t.Fatalf("filled %s, want it left alone", got)
				}
				return
			}
			if got == nil {
				t.Fatal("not filled")
			}
			defer got.Release()
			if !arrow.TypeEqual(got.DataType(), tc.want) {
				t.Fatalf("type %s, want %s", got.DataType(), tc.want)
			}
			js, err := got.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if strings.ReplaceAll(string(js), "\n", "") != tc.out {
				t.Fatalf("got  %s\nwant %s", js, tc.out)
			}
		})
	}
}
