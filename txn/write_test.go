package txn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

func TestSameColumns(t *testing.T) {
	a := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	c := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	if !sameColumns(a, b) || sameColumns(a, c) || sameColumns(a, nil) {
		t.Fatal("sameColumns")
	}
}

func TestCheckUTF8(t *testing.T) {
	tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}
	mk := func(vals []string, valid []bool) arrow.RecordBatch {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(vals, valid)
		arr := b.NewArray()
		defer arr.Release()
		schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
		return array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))
	}
	cases := []struct {
		name  string
		vals  []string
		valid []bool
		bad   string // the row named, "" for valid
	}{
		{"ascii", []string{"a", "bc", ""}, nil, ""},
		{"multibyte", []string{"é", "日本", "🦆"}, nil, ""},
		{"invalid byte", []string{"a", "b\xff", "c"}, nil, "row 11"},
		// Each half of "é" alone: the bytes are valid as a whole, the
		// values are not.
		{"split rune", []string{"x", "\xc3", "\xa9"}, nil, "row 11"},
		{"truncated at end", []string{"ok", "\xe6\x97"}, nil, "row 11"},
		{"garbage under a null", []string{"ok", "\xff"}, []bool{true, false}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := mk(c.vals, c.valid)
			defer b.Release()
			err := checkUTF8(tbl, b, 10)
			if c.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.bad) || !strings.Contains(err.Error(), `column "s"`) {
				t.Fatalf("err = %v, want one naming column s and %s", err, c.bad)
			}
		})
	}
}

func TestCheckUTF8Nested(t *testing.T) {
	tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}
	typ := arrow.ListOf(arrow.BinaryTypes.String)
	schema := arrow.NewSchema([]arrow.Field{{Name: "tags", Type: typ}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	lb := b.Field(0).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for _, row := range [][]string{{"a", "b"}, {}, {"c", "d\xff"}} {
		lb.Append(true)
		vb.AppendValues(row, nil)
	}
	batch := b.NewRecordBatch()
	defer batch.Release()
	if err := checkUTF8(tbl, batch, 0); err == nil || !strings.Contains(err.Error(), "row 2") {
		t.Fatalf("err = %v, want row 2", err)
	}
}

// BenchmarkCheckUTF8 measures the check on a 64Ki-row batch of 16-byte
// strings (the ingest benchmark's string column), in bytes per second.
func BenchmarkCheckUTF8(b *testing.B) {
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 1 << 16 {
		sb.Append(fmt.Sprintf("name-%011d", i))
	}
	arr := sb.NewArray()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	batch := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))
	tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}
	b.SetBytes(int64(len(arr.(*array.String).ValueBytes())))
	b.ResetTimer()
	for range b.N {
		if err := checkUTF8(tbl, batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// optioner is a backend that takes table options at create.
type optioner struct{ recorder }

func (*optioner) CreateTable(context.Context, catalogs.TableIdent, *arrow.Schema, map[string]string) (catalogs.TableSpec, error) {
	return catalogs.TableSpec{}, nil
}

func (*optioner) DropTable(context.Context, catalogs.TableIdent) error { return nil }

func (*optioner) CheckTableOptions(catalogs.TableIdent, *arrow.Schema, map[string]string) error {
	return nil
}

func TestCheckTableOptions(t *testing.T) {
	opts := map[string]string{"partition": "id", "bucket": "4"}
	for _, tc := range []struct {
		name   string
		p      catalogs.Provider
		create bool
		opts   map[string]string
		want   string // "" is no error; else the message names it
	}{
		{"no options, no creator", &recorder{}, false, nil, ""},
		{"creator, create", &optioner{}, true, opts, ""},
		{"no creator", &recorder{}, true, opts, `option "bucket": catalog "c" creates no tables and takes no table options`},
		{"append", &optioner{}, false, opts, `option "bucket": table options apply only to an ingest that creates the table`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkTableOptions(Write{Table: catalogs.TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"},
				Provider: tc.p, CreateIfMissing: tc.create, TableOptions: tc.opts})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(fmt.Sprint(err), tc.want)):
				t.Fatalf("err = %v, want InvalidArgument naming %s", err, tc.want)
			}
		})
	}
}
