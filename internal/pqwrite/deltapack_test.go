package pqwrite

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// DeltaPackedColumns picks the integer columns whose sampled steps are
// narrow and the string and binary columns of distinct values, and the
// file it configures reads back value for value, those columns
// delta-packed and delta-length.
func TestDeltaPackedColumns(t *testing.T) {
	const n = 5000
	rng := rand.New(rand.NewPCG(3, 4))
	mem := memory.NewGoAllocator()
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	var acc64 int64
	var acc32 int32
	cols := []struct {
		name   string
		typ    arrow.DataType
		value  func(i int) any // nil: a null
		packed bool
		length bool // DELTA_LENGTH_BYTE_ARRAY
	}{
		{"ids", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(1e12 + i) }, true, false},
		{"down", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(-3 * i) }, true, false},
		{"random", arrow.PrimitiveTypes.Int64, func(int) any { return rng.Int64() }, false, false},
		{"even wide steps", arrow.PrimitiveTypes.Int64, func(i int) any { return int64(i) << 40 }, true, false}, // packed as steps less the smallest: 0 bits
		{"uneven steps", arrow.PrimitiveTypes.Int64, func(int) any { acc64 += rng.Int64N(1 << 20); return acc64 }, false, false},
		{"events", ts, func(i int) any { return arrow.Timestamp(1_700_000_000_000_000 + 1000*i + rng.IntN(1000)) }, true, false},
		{"random times", ts, func(int) any { return arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(3e13)) }, false, false},
		{"nulls between", arrow.PrimitiveTypes.Int32, func(i int) any {
			if i%3 == 0 {
				return nil
			}
			return int32(i)
		}, true, false},
		{"int32 steps up to 1000", arrow.PrimitiveTypes.Int32, func(int) any { acc32 += rng.Int32N(1000); return acc32 }, false, false},
		{"wrapping", arrow.PrimitiveTypes.Int32, func(i int) any { return int32(1<<31 - 1 - 2500 + i) }, true, false},
		{"dates", arrow.FixedWidthTypes.Date32, func(i int) any { return arrow.Date32(i / 10) }, true, false},
		{"floats", arrow.PrimitiveTypes.Float64, func(i int) any { return float64(i) }, false, false},
		{"keys", arrow.BinaryTypes.String, func(int) any { return fmt.Sprintf("key-%08x", rng.Uint32()) }, false, true},
		{"codes", arrow.BinaryTypes.String, func(i int) any { return []string{"a", "bb", ""}[i%3] }, false, false},
		{"hashes", arrow.BinaryTypes.Binary, func(i int) any {
			if i%5 == 0 {
				return nil
			}
			return []byte(fmt.Sprintf("\x00%d\xff", rng.Int64()))
		}, false, true},
		{"empty", arrow.BinaryTypes.String, func(int) any { return "" }, false, false},
	}
	var fields []arrow.Field
	for _, c := range cols {
		fields = append(fields, arrow.Field{Name: c.name, Type: c.typ, Nullable: true})
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for i := range n {
		for k, c := range cols {
			v := c.value(i)
			switch fb := b.Field(k).(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Int32Builder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.(int32))
				}
			case *array.TimestampBuilder:
				fb.Append(v.(arrow.Timestamp))
			case *array.Date32Builder:
				fb.Append(v.(arrow.Date32))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BinaryBuilder:
				if v == nil {
					fb.AppendNull()
				} else {
					fb.Append(v.([]byte))
				}
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	props := DeltaPackedColumns(rec)
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(append(props, parquet.WithMaxRowGroupLength(2000))...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range cols {
		for g := range r.NumRowGroups() {
			cc, err := r.MetaData().RowGroup(g).ColumnChunk(k)
			if err != nil {
				t.Fatal(err)
			}
			packed := slices.Contains(cc.Encodings(), parquet.Encodings.DeltaBinaryPacked)
			length := slices.Contains(cc.Encodings(), parquet.Encodings.DeltaLengthByteArray)
			if packed != c.packed || length != c.length {
				t.Errorf("%s, row group %d: encodings %v, want delta-packed %v, delta-length %v", c.name, g, cc.Encodings(), c.packed, c.length)
			}
		}
	}
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for k, c := range cols {
		got, err := array.Concatenate(tbl.Column(k).Data().Chunks(), mem)
		if err != nil {
			t.Fatal(err)
		}
		if !array.Equal(got, rec.Column(k)) {
			t.Errorf("%s: the values read back differ", c.name)
		}
		got.Release()
	}
}
