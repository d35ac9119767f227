package paimon_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// TestWriteRoundsAsPaimon: a timestamp finer than its TIMESTAMP(6) or
// TIMESTAMP(3) column rounds down, as Paimon's Timestamp.toMicros and
// toEpochMillis do (an instant before 1970 does not move forward across a
// second boundary), and decimal32, decimal64 and decimal256 uploads are
// stored as the DECIMAL(p, s) their table was created with, value by
// value. Before, -1 ns became 0 µs (1970-01-01 instead of 1969-12-31)
// and every decimal32/decimal64 batch was refused after its table had
// been created.
func TestWriteRoundsAsPaimon(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	ns := []int64{-1, -1001, -1_000_000_001, 1999, 0}
	cases := []struct {
		name string
		tbl  arrow.DataType // the table's column type (from create)
		want []string
	}{
		{"ns_to_us", &arrow.TimestampType{Unit: arrow.Nanosecond},
			[]string{"-1", "-2", "-1000001", "1", "0"}},
		{"us_to_ms", &arrow.TimestampType{Unit: arrow.Millisecond},
			[]string{"-1", "-1", "-1000001", "1", "0"}},
		{"decimal32", &arrow.Decimal32Type{Precision: 9, Scale: 2}, []string{"-1.00", "-10.01", "123.45", "0.00", "9999999.99"}},
		{"decimal64", &arrow.Decimal64Type{Precision: 18, Scale: 3}, []string{"-1.000", "-10.010", "123.450", "0.000", "999999999999999.999"}},
		{"decimal256", &arrow.Decimal256Type{Precision: 20, Scale: 1}, []string{"-1.0", "-10.0", "123.4", "0.0", "9999999999999999999.9"}},
	}
	for _, c := range cases {
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: c.name}
		sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: c.tbl, Nullable: true}}, nil)
		var in arrow.Array
		switch c.name {
		case "ns_to_us":
			// The table is created from the ns column (TIMESTAMP(6)).
			b := array.NewTimestampBuilder(memory.DefaultAllocator, c.tbl.(*arrow.TimestampType))
			for _, v := range ns {
				b.Append(arrow.Timestamp(v))
			}
			in = b.NewArray()
			b.Release()
		case "us_to_ms":
			b := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Microsecond})
			for _, v := range []int64{-1, -999, -1_000_000_001, 1999, 0} {
				b.Append(arrow.Timestamp(v))
			}
			in = b.NewArray()
			b.Release()
		default:
			b := array.NewBuilder(memory.DefaultAllocator, c.tbl)
			for _, v := range c.want {
				if err := b.AppendValueFromString(v); err != nil {
					t.Fatal(err)
				}
			}
			in = b.NewArray()
			b.Release()
		}
		if _, err := p.CreateTable(ctx, id, sc, nil); err != nil {
			t.Fatalf("%s: create: %v", c.name, err)
		}
		batchSchema := sc
		if c.name == "us_to_ms" {
			batchSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: in.DataType(), Nullable: true}}, nil)
		}
		rec := array.NewRecordBatch(batchSchema, []arrow.Array{in}, int64(in.Len()))
		r, err := p.WriteBatch(ctx, id, rec)
		rec.Release()
		in.Release()
		if err != nil {
			t.Errorf("%s: write: %v", c.name, err)
			continue
		}
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
			t.Fatal(err)
		}
		res, err := p.Scan(ctx, id, catalogs.ScanRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for res.Reader.Next() {
			a := res.Reader.RecordBatch().Column(0)
			for i := range a.Len() {
				switch x := a.(type) {
				case *array.Timestamp:
					got = append(got, fmt.Sprint(int64(x.Value(i))))
				case *array.Decimal128:
					got = append(got, x.Value(i).ToString(x.DataType().(*arrow.Decimal128Type).Scale))
				default:
					got = append(got, a.ValueStr(i))
				}
			}
		}
		res.Reader.Release()
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: read back %v, want %v", c.name, got, c.want)
		}
	}
}
