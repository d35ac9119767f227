package delta

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/flightgw/flightgw/catalogs/lake"
)

type nopCloser struct{ bytes.Buffer }

func (*nopCloser) Close() error { return nil }

// TestStatsBounds: the add action's min/max/nullCount over several
// batches, with nulls, sliced arrays, a NaN and an over-long string (no
// bounds for those columns), and bounds that survive the batch's buffers
// being overwritten after Observe (a pooling allocator reuses them).
func TestStatsBounds(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "nan", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "u", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "long", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "tn", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	long := string(make([]byte, maxStatString+1))
	batch := func(is []int32, fs []float64, ss, us []string, ds []arrow.Date32, ts []arrow.Timestamp, valid []bool) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		b.Field(0).(*array.Int32Builder).AppendValues(is, valid)
		b.Field(1).(*array.Float64Builder).AppendValues(fs, valid)
		nans := make([]float64, len(fs))
		nans[len(nans)-1] = math.NaN()
		b.Field(2).(*array.Float64Builder).AppendValues(nans, nil)
		b.Field(3).(*array.StringBuilder).AppendValues(ss, valid)
		b.Field(4).(*array.StringBuilder).AppendValues(us, valid)
		longs := make([]string, len(ss))
		longs[0] = long
		b.Field(5).(*array.StringBuilder).AppendValues(longs, nil)
		b.Field(6).(*array.Date32Builder).AppendValues(ds, valid)
		b.Field(7).(*array.TimestampBuilder).AppendValues(ts, valid)
		b.Field(8).(*array.TimestampBuilder).AppendValues(ts, valid)
		return b.NewRecordBatch()
	}
	o := newStats(sc)
	// Through a Parquet file, as a stream writes one: the bounds but the
	// floats' come from its footer. Row groups of four rows, so that
	// they are folded across row groups.
	b1 := batch([]int32{5, -7, 100, 3}, []float64{1.5, -2.5, 1e9, 0}, []string{"m", "b", "zz", "c"},
		[]string{"é", "ä", "ü", "a"}, []arrow.Date32{10, 2, 99, 7}, []arrow.Timestamp{1500, -1, 9e15, 2_000_001},
		[]bool{true, true, false, true})
	var out nopCloser
	pf, err := lake.NewParquetFile(&out, sc, b1, lake.ParquetOptions{Props: []parquet.WriterProperty{parquet.WithMaxRowGroupLength(4)}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.Write(b1); err != nil {
		t.Fatal(err)
	}
	// A slice of a batch: only rows 1..2 count (the -100 and "a" outside it must not).
	b2 := batch([]int32{-100, 9, 8, -100}, []float64{-1e9, 4, 5, -1e9}, []string{"a", "n", "y", "a"},
		[]string{"0", "ö", "é", "0"}, []arrow.Date32{0, 50, 60, 0}, []arrow.Timestamp{-9e15, 5_000_000_001, 3, 9e15}, nil)
	s2 := b2.NewSlice(1, 3)
	if err := pf.Write(s2); err != nil {
		t.Fatal(err)
	}
	// Scribble over every string buffer: bounds must be copies.
	for _, r := range []arrow.RecordBatch{b1, b2} {
		for _, c := range []int{3, 4} {
			buf := r.Column(c).Data().Buffers()[2].Bytes()
			for i := range buf {
				buf[i] = 'X'
			}
		}
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	md, err := pf.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.NumRowGroups() != 2 {
		t.Fatalf("%d row groups, want 2", md.NumRowGroups())
	}
	if err := o.footer(md); err != nil {
		t.Fatal(err)
	}
	got, err := o.json(7)
	if err != nil {
		t.Fatal(err)
	}
	b1.Release()
	s2.Release()
	b2.Release()
	var st struct {
		NumRecords int64
		MinValues  map[string]any
		MaxValues  map[string]any
		NullCount  map[string]float64
	}
	if err := json.Unmarshal([]byte(got), &st); err != nil {
		t.Fatal(err)
	}
	// Timestamps in milliseconds, the minimum rounded down (-1 µs is
	// before the epoch's millisecond), the maximum up.
	want := map[string][2]any{"i": {-7.0, 9.0}, "f": {-2.5, 5.0}, "s": {"b", "y"}, "u": {"a", "ö"}, "d": {"1970-01-03", "1970-03-02"},
		"ts": {"1969-12-31T23:59:59.999Z", "1970-01-01T01:23:20.001Z"}, "tn": {"1969-12-31T23:59:59.999", "1970-01-01T01:23:20.001"}}
	for col, w := range want {
		if st.MinValues[col] != w[0] || st.MaxValues[col] != w[1] {
			t.Errorf("%s: min %v max %v, want %v %v (stats %s)", col, st.MinValues[col], st.MaxValues[col], w[0], w[1], got)
		}
	}
	for _, col := range []string{"nan", "long"} {
		if _, ok := st.MinValues[col]; ok {
			t.Errorf("%s has bounds: %s", col, got)
		}
	}
	for col, n := range map[string]float64{"i": 1, "f": 1, "s": 1, "nan": 0, "long": 0, "d": 1, "ts": 1, "tn": 1} {
		if st.NullCount[col] != n {
			t.Errorf("nullCount[%s] = %v, want %v (%s)", col, st.NullCount[col], n, got)
		}
	}
}
