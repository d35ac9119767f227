package pqwrite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/duckdb/duckdb-go/v2"
)

// flatFields are the column types FlatWriter writes, each nullable and
// not.
func flatFields() []arrow.Field {
	types := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Date32,
		arrow.FixedWidthTypes.Time32ms, arrow.PrimitiveTypes.Int64, arrow.FixedWidthTypes.Time64us, arrow.FixedWidthTypes.Time64ns,
		&arrow.TimestampType{Unit: arrow.Millisecond}, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Nanosecond}, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.LargeBinary,
	}
	var fs []arrow.Field
	for i, t := range types {
		fs = append(fs, arrow.Field{Name: fmt.Sprintf("c%d_%s", i, t), Type: t, Nullable: true},
			arrow.Field{Name: fmt.Sprintf("r%d_%s", i, t), Type: t})
	}
	return fs
}

// genColumn is n random values of t; nulls, when nullable, at rate.
// Integers come in runs of small steps, with the extremes mixed in, so
// that delta packing sees narrow and full-width blocks.
func genColumn(tb testing.TB, r *rand.Rand, t arrow.DataType, n int, nullable bool, rate float64) arrow.Array {
	b := array.NewBuilder(memory.DefaultAllocator, t)
	defer b.Release()
	var walk int64
	for range n {
		if nullable && r.Float64() < rate {
			b.AppendNull()
			continue
		}
		walk += int64(r.IntN(7)) - 2
		i64 := walk
		switch r.IntN(40) {
		case 0:
			i64 = math.MinInt64
		case 1:
			i64 = math.MaxInt64
		case 2:
			i64 = r.Int64()
		}
		i32 := int32(i64)
		switch b := b.(type) {
		case *array.BooleanBuilder:
			b.Append(r.IntN(2) == 0)
		case *array.Int32Builder:
			b.Append(i32)
		case *array.Date32Builder:
			b.Append(arrow.Date32(i32 % 2_000_000))
		case *array.Time32Builder:
			b.Append(arrow.Time32((i32%86_400_000 + 86_400_000) % 86_400_000))
		case *array.Int64Builder:
			b.Append(i64)
		case *array.Time64Builder:
			b.Append(arrow.Time64((i64%86_400_000_000 + 86_400_000_000) % 86_400_000_000))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(i64 % (1 << 45))) // within what DuckDB converts
		case *array.Float32Builder:
			b.Append([]float32{float32(r.NormFloat64()), float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1))}[min(r.IntN(20), 4)])
		case *array.Float64Builder:
			b.Append([]float64{r.NormFloat64() * 1e6, math.NaN(), 0, math.Copysign(0, -1), math.Inf(-1)}[min(r.IntN(20), 4)])
		case *array.StringBuilder:
			b.Append(genString(r, false))
		case *array.LargeStringBuilder:
			b.Append(genString(r, false))
		case *array.BinaryBuilder:
			b.Append([]byte(genString(r, true)))
		default:
			tb.Fatalf("genColumn: no values for %s", t)
		}
	}
	return b.NewArray()
}

// genString is a short string, an empty one, a non-ASCII one or now and
// then one past 64 KiB; bytes that are not UTF-8 when binary.
func genString(r *rand.Rand, binary bool) string {
	switch r.IntN(200) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("ü€", 12000+r.IntN(100))
	case 2:
		if binary {
			return "\x00\xff"
		}
		return "\x00é"
	}
	return fmt.Sprintf("v%06d-%x", r.IntN(1_000_000), r.Uint32())
}

// genBatch is a batch of n rows of sc, sliced from a larger one at a
// random offset so that the arrays' offsets are not 0.
func genBatch(tb testing.TB, r *rand.Rand, sc *arrow.Schema, n int, rate float64) arrow.RecordBatch {
	skip := r.IntN(9)
	cols := make([]arrow.Array, sc.NumFields())
	for i, f := range sc.Fields() {
		full := genColumn(tb, r, f.Type, n+skip, f.Nullable, rate)
		cols[i] = array.NewSlice(full, int64(skip), int64(skip+n))
		full.Release()
	}
	b := array.NewRecordBatch(sc, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return b
}

// writeBoth writes batches with FlatWriter and with pqarrow, the same
// properties, and returns both files.
func writeBoth(t *testing.T, sc *arrow.Schema, props []parquet.WriterProperty, batches []arrow.RecordBatch) (flat, ref []byte) {
	t.Helper()
	var fb, rb bytes.Buffer
	fw, ok, err := NewFlatWriter(sc, &fb, parquet.NewWriterProperties(props...), true)
	if err != nil || !ok {
		t.Fatalf("NewFlatWriter: ok %v, err %v", ok, err)
	}
	pw, err := pqarrow.NewFileWriter(sc, &rb, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := fw.Write(b); err != nil {
			t.Fatalf("flat write: %v", err)
		}
		if err := pw.WriteBuffered(b); err != nil {
			t.Fatalf("pqarrow write: %v", err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Metadata(); err != nil {
		t.Fatal(err)
	}
	return fb.Bytes(), rb.Bytes()
}

func readTable(t *testing.T, data []byte) (arrow.Table, *metadata.FileMetaData) {
	t.Helper()
	rd, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	fr, err := pqarrow.NewFileReader(rd, pqarrow.ArrowReadProperties{BatchSize: 1 << 12}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return tbl, rd.MetaData()
}

// TestFlatWriterMatchesPqarrow writes random batches of every type
// FlatWriter takes, nulls at several rates, with both writers, and reads
// both files back with arrow-go and with DuckDB: the same rows, the same
// row groups, the same footer statistics.
func TestFlatWriterMatchesPqarrow(t *testing.T) {
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	sc := arrow.NewSchema(flatFields(), &md)
	delta := func(props []parquet.WriterProperty) []parquet.WriterProperty {
		for _, f := range sc.Fields() {
			switch f.Type.ID() {
			case arrow.INT32, arrow.DATE32, arrow.INT64, arrow.TIMESTAMP:
				props = append(props, parquet.WithEncodingFor(f.Name, parquet.Encodings.DeltaBinaryPacked))
			case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
				props = append(props, parquet.WithEncodingFor(f.Name, parquet.Encodings.DeltaLengthByteArray))
			}
		}
		return props
	}
	base := []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(1)}
	cases := []struct {
		name  string
		props []parquet.WriterProperty
		sizes []int
		rate  float64
	}{
		{"plain", base, []int{1000, 1, 4000, 333}, 0.1},
		{"no nulls", base, []int{5000}, 0},
		{"all null", base, []int{700, 1}, 1},
		{"small pages", append(base, parquet.WithDataPageSize(1<<10)), []int{3000, 2000}, 0.3},
		{"row groups", append(base, parquet.WithMaxRowGroupLength(1500)), []int{1000, 1000, 2500, 10}, 0.05},
		{"delta", delta(base), []int{3000, 129, 1, 2}, 0.2},
		{"delta small pages", delta(append(base, parquet.WithDataPageSize(1<<10))), []int{4000}, 0},
		{"snappy", append(base, parquet.WithCompression(compress.Codecs.Snappy)), []int{2000}, 0.1},
		{"uncompressed", append(base, parquet.WithCompression(compress.Codecs.Uncompressed)), []int{2000}, 0.5},
		{"no statistics", append(base, parquet.WithStats(false)), []int{2000}, 0.1},
		{"v2 pages", append(base, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(4<<10)), []int{3000, 1, 700}, 0.2},
		{"v2 no nulls", append(base, parquet.WithDataPageVersion(parquet.DataPageV2)), []int{2000}, 0},
		{"v2 all null", append(base, parquet.WithDataPageVersion(parquet.DataPageV2)), []int{300}, 1},
		{"v2 delta", delta(append(base, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDataPageSize(2<<10))), []int{3000}, 0.1},
		{"v2 uncompressed", append(base, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Uncompressed)), []int{2000}, 0.3},
		{"small statistics", append(base, parquet.WithMaxStatsSize(8)), []int{2000}, 0.1},
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 7))
			var batches []arrow.RecordBatch
			for _, n := range tc.sizes {
				b := genBatch(t, r, sc, n, tc.rate)
				defer b.Release()
				batches = append(batches, b)
			}
			flat, ref := writeBoth(t, sc, tc.props, batches)
			ft, fmd := readTable(t, flat)
			defer ft.Release()
			rt, rmd := readTable(t, ref)
			defer rt.Release()
			if !ft.Schema().Equal(rt.Schema()) {
				t.Fatalf("schema\n%s\nwant\n%s", ft.Schema(), rt.Schema())
			}
			for c := range int(ft.NumCols()) {
				if !array.ChunkedApproxEqual(ft.Column(c).Data(), rt.Column(c).Data(), array.WithNaNsEqual(true)) {
					t.Errorf("column %s: values differ from pqarrow's", sc.Field(c).Name)
				}
			}
			compareFooters(t, sc, fmd, rmd)
			compareDuckDB(t, db, flat, ref)
		})
	}
}

// compareFooters checks row groups, value counts and statistics.
func compareFooters(t *testing.T, sc *arrow.Schema, got, want *metadata.FileMetaData) {
	t.Helper()
	if got.NumRows != want.NumRows || got.NumRowGroups() != want.NumRowGroups() {
		t.Fatalf("rows %d in %d row groups, want %d in %d", got.NumRows, got.NumRowGroups(), want.NumRows, want.NumRowGroups())
	}
	gkv, wkv := got.KeyValueMetadata(), want.KeyValueMetadata()
	if len(gkv) != len(wkv) {
		t.Errorf("%d key-value pairs, want %d", len(gkv), len(wkv))
	}
	for _, k := range wkv.Keys() {
		if g, w := gkv.FindValue(k), wkv.FindValue(k); g == nil || *g != *w {
			t.Errorf("key-value metadata %s: %v, want %q", k, g, *w)
		}
	}
	for g := range got.NumRowGroups() {
		grg, wrg := got.RowGroup(g), want.RowGroup(g)
		if grg.NumRows() != wrg.NumRows() {
			t.Errorf("row group %d: %d rows, want %d", g, grg.NumRows(), wrg.NumRows())
		}
		for c := range grg.NumColumns() {
			gc, _ := grg.ColumnChunk(c)
			wc, _ := wrg.ColumnChunk(c)
			name := sc.Field(c).Name
			if gc.NumValues() != wc.NumValues() || gc.Compression() != wc.Compression() {
				t.Errorf("row group %d column %s: %d values %v, want %d %v", g, name, gc.NumValues(), gc.Compression(), wc.NumValues(), wc.Compression())
			}
			gs, gerr := gc.StatsSet()
			ws, werr := wc.StatsSet()
			if gs != ws || gerr != nil || werr != nil {
				t.Errorf("row group %d column %s: statistics set %v (%v), want %v (%v)", g, name, gs, gerr, ws, werr)
				continue
			}
			if !gs {
				continue
			}
			gst, _ := gc.Statistics()
			wst, _ := wc.Statistics()
			if gst.HasMinMax() != wst.HasMinMax() || gst.NullCount() != wst.NullCount() || gst.HasNullCount() != wst.HasNullCount() {
				t.Errorf("row group %d column %s: statistics %v, want %v", g, name, gst, wst)
				continue
			}
			if gst.HasMinMax() && (!bytes.Equal(gst.EncodeMin(), wst.EncodeMin()) || !bytes.Equal(gst.EncodeMax(), wst.EncodeMax())) {
				t.Errorf("row group %d column %s: min/max %x/%x, want %x/%x", g, name, gst.EncodeMin(), gst.EncodeMax(), wst.EncodeMin(), wst.EncodeMax())
			}
		}
	}
}

// compareDuckDB has DuckDB's own Parquet reader read both files: the same
// rows, as a multiset.
func compareDuckDB(t *testing.T, db *sql.DB, flat, ref []byte) {
	t.Helper()
	dir := t.TempDir()
	fp, rp := filepath.Join(dir, "flat.parquet"), filepath.Join(dir, "ref.parquet")
	if err := os.WriteFile(fp, flat, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rp, ref, 0o600); err != nil {
		t.Fatal(err)
	}
	var n, diff1, diff2 int64
	q := `SELECT (SELECT count(*) FROM read_parquet('%[1]s')),
		(SELECT count(*) FROM (SELECT * FROM read_parquet('%[1]s') EXCEPT ALL SELECT * FROM read_parquet('%[2]s'))),
		(SELECT count(*) FROM (SELECT * FROM read_parquet('%[2]s') EXCEPT ALL SELECT * FROM read_parquet('%[1]s')))`
	if err := db.QueryRow(fmt.Sprintf(q, fp, rp)).Scan(&n, &diff1, &diff2); err != nil {
		t.Fatalf("duckdb: %v", err)
	}
	if diff1 != 0 || diff2 != 0 {
		t.Errorf("duckdb: of %d rows, %d of FlatWriter's are not pqarrow's and %d of pqarrow's not FlatWriter's", n, diff1, diff2)
	}
}

// TestFlatWriterRefuses: what only pqarrow writes is left to it, and a
// batch FlatWriter cannot write is an error, not a panic or a bad file.
func TestFlatWriterRefuses(t *testing.T) {
	plain := []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}
	f := func(t arrow.DataType) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{{Name: "a", Type: t, Nullable: true}}, nil)
	}
	for _, tc := range []struct {
		name  string
		sc    *arrow.Schema
		props []parquet.WriterProperty
	}{
		{"dictionary", f(arrow.PrimitiveTypes.Int64), nil},
		{"dictionary beside a boolean", arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
			{Name: "s", Type: arrow.BinaryTypes.String}}, nil), []parquet.WriterProperty{parquet.WithDictionaryFor("b", false)}},
		{"int8", f(arrow.PrimitiveTypes.Int8), plain},
		{"uint32", f(arrow.PrimitiveTypes.Uint32), plain},
		{"seconds", f(&arrow.TimestampType{Unit: arrow.Second}), plain},
		{"time of seconds", f(arrow.FixedWidthTypes.Time32s), plain},
		{"nanoseconds in Parquet 2.4", f(&arrow.TimestampType{Unit: arrow.Nanosecond}), append(plain, parquet.WithVersion(parquet.V2_4))},
		{"decimal", f(&arrow.Decimal128Type{Precision: 10, Scale: 2}), plain},
		{"list", f(arrow.ListOf(arrow.PrimitiveTypes.Int64)), plain},
		{"struct", f(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64})), plain},
		{"dictionary array", f(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}), plain},
		{"delta byte array strings", f(arrow.BinaryTypes.String), append(plain, parquet.WithEncoding(parquet.Encodings.DeltaByteArray))},
		{"delta length integers", f(arrow.PrimitiveTypes.Int64), append(plain, parquet.WithEncoding(parquet.Encodings.DeltaLengthByteArray))},
		{"delta floats", f(arrow.PrimitiveTypes.Float64), append(plain, parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked))},
		{"page index", f(arrow.PrimitiveTypes.Int64), append(plain, parquet.WithPageIndexEnabled(true))},
		{"bloom filter", f(arrow.PrimitiveTypes.Int64), append(plain, parquet.WithBloomFilterEnabled(true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ok, err := NewFlatWriter(tc.sc, &bytes.Buffer{}, parquet.NewWriterProperties(tc.props...), false)
			if ok || err != nil {
				t.Errorf("ok %v, err %v; want it left to pqarrow", ok, err)
			}
		})
	}

	// Booleans never get a dictionary (arrow-go ignores the property
	// for them), so it does not send a file to pqarrow.
	bools := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}}, nil)
	if _, ok, err := NewFlatWriter(bools, &bytes.Buffer{}, parquet.NewWriterProperties(), false); !ok || err != nil {
		t.Errorf("a boolean column with the dictionary on: ok %v, err %v; want FlatWriter", ok, err)
	}

	sc := arrow.NewSchema([]arrow.Field{{Name: "req", Type: arrow.PrimitiveTypes.Int64}}, nil)
	fw, ok, err := NewFlatWriter(sc, &bytes.Buffer{}, parquet.NewWriterProperties(plain...), false)
	if !ok || err != nil {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2}, []bool{true, false})
	a := b.NewArray()
	withNull := array.NewRecordBatch(sc, []arrow.Array{a}, 2)
	if err := fw.Write(withNull); err == nil || !strings.Contains(err.Error(), "req") {
		t.Errorf("a null in a required column: %v, want an error naming it", err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "req", Type: arrow.PrimitiveTypes.Int32}}, nil)
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	ib.AppendValues([]int32{1}, nil)
	ia := ib.NewArray()
	fw2, _, _ := NewFlatWriter(sc, &bytes.Buffer{}, parquet.NewWriterProperties(plain...), false)
	if err := fw2.Write(array.NewRecordBatch(other, []arrow.Array{ia}, 1)); err == nil {
		t.Error("a batch of another schema was written")
	}
}

// FuzzFlatWriter writes batches of a random subset of the column types,
// sizes, null rates, page and row-group sizes and encodings with both
// writers: arrow-go reads the same rows and statistics from each.
func FuzzFlatWriter(f *testing.F) {
	f.Add(uint64(1), uint16(100), uint8(10), uint16(300), uint8(3))
	f.Add(uint64(2), uint16(5000), uint8(0), uint16(1), uint8(255))
	f.Add(uint64(3), uint16(1), uint8(100), uint16(9), uint8(0))
	all := flatFields()
	f.Fuzz(func(t *testing.T, seed uint64, rows uint16, nullPct uint8, rowGroup uint16, shape uint8) {
		r := rand.New(rand.NewPCG(seed, uint64(shape)))
		var fields []arrow.Field
		for _, fl := range all {
			if r.IntN(3) == 0 {
				fields = append(fields, fl)
			}
		}
		if len(fields) == 0 {
			fields = all[:1]
		}
		sc := arrow.NewSchema(fields, nil)
		props := []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithDataPageSize(int64(1<<10 + int(shape)*97)), parquet.WithMaxRowGroupLength(int64(rowGroup%2000) + 1)}
		if shape%2 == 1 {
			props = append(props, parquet.WithDataPageVersion(parquet.DataPageV2))
		}
		for _, fl := range fields {
			switch fl.Type.ID() {
			case arrow.INT32, arrow.DATE32, arrow.INT64, arrow.TIMESTAMP:
				if r.IntN(2) == 0 {
					props = append(props, parquet.WithEncodingFor(fl.Name, parquet.Encodings.DeltaBinaryPacked))
				}
			case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
				if r.IntN(2) == 0 {
					props = append(props, parquet.WithEncodingFor(fl.Name, parquet.Encodings.DeltaLengthByteArray))
				}
			}
		}
		rate := float64(nullPct%101) / 100
		var batches []arrow.RecordBatch
		for left := int(rows % 6000); left > 0; {
			n := min(left, 1+r.IntN(3000))
			b := genBatch(t, r, sc, n, rate)
			defer b.Release()
			batches = append(batches, b)
			left -= n
		}
		flat, ref := writeBoth(t, sc, props, batches)
		ft, fmd := readTable(t, flat)
		defer ft.Release()
		rt, rmd := readTable(t, ref)
		defer rt.Release()
		for c := range int(ft.NumCols()) {
			if !array.ChunkedApproxEqual(ft.Column(c).Data(), rt.Column(c).Data(), array.WithNaNsEqual(true)) {
				t.Errorf("column %s: values differ from pqarrow's", sc.Field(c).Name)
			}
		}
		compareFooters(t, sc, fmd, rmd)
	})
}

// benchBatches are 1M rows like the Delta ingest benchmark's (an ordered
// int64, a random float64, a 16-byte string, a random timestamp) in
// batches of 65536.
func benchBatches(b *testing.B) (*arrow.Schema, []arrow.RecordBatch) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}, nil)
	r := rand.New(rand.NewPCG(1, 2))
	var out []arrow.RecordBatch
	for k := 0; k < 16; k++ {
		n := 65536
		ib, fb, sb, tb := array.NewInt64Builder(memory.DefaultAllocator), array.NewFloat64Builder(memory.DefaultAllocator),
			array.NewStringBuilder(memory.DefaultAllocator), array.NewTimestampBuilder(memory.DefaultAllocator, sc.Field(3).Type.(*arrow.TimestampType))
		for i := range n {
			ib.Append(int64(k*n + i))
			fb.Append((r.Float64() - 0.5) * 2000)
			sb.Append(fmt.Sprintf("tag-%012x", r.Uint64()&(1<<48-1)))
			tb.Append(arrow.Timestamp(1_700_000_000_000_000 + r.Int64N(365*86400*1e6)))
		}
		cols := []arrow.Array{ib.NewArray(), fb.NewArray(), sb.NewArray(), tb.NewArray()}
		out = append(out, array.NewRecordBatch(sc, cols, int64(n)))
	}
	return sc, out
}

// BenchmarkFlatWriter writes benchBatches as the Delta backend does (ZSTD
// level 1, pages of 256 KiB, id delta-packed), with FlatWriter and with
// pqarrow: `go test ./internal/pqwrite -run '^$' -bench FlatWriter`.
func BenchmarkFlatWriter(b *testing.B) {
	sc, batches := benchBatches(b)
	props := []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(DefaultZstdLevel), parquet.WithDataPageSize(256 << 10),
		parquet.WithEncodingFor("id", parquet.Encodings.DeltaBinaryPacked)}
	rows := int64(16 * 65536)
	b.Run("flat", func(b *testing.B) {
		for b.Loop() {
			fw, _, _ := NewFlatWriter(sc, io.Discard, parquet.NewWriterProperties(props...), false)
			for _, rb := range batches {
				if err := fw.Write(rb); err != nil {
					b.Fatal(err)
				}
				if fw.RowGroupBytes() >= 4<<20 {
					_ = fw.FlushRowGroup()
				}
			}
			_ = fw.Close()
		}
		b.ReportMetric(float64(rows*int64(b.N))/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("pqarrow", func(b *testing.B) {
		for b.Loop() {
			pw, _ := pqarrow.NewFileWriter(sc, io.Discard, parquet.NewWriterProperties(props...), pqarrow.DefaultWriterProps())
			for _, rb := range batches {
				if err := pw.WriteBuffered(rb); err != nil {
					b.Fatal(err)
				}
				if pw.RowGroupTotalCompressedBytes() >= 4<<20 {
					_ = pw.NewBufferedRowGroupChecked()
				}
			}
			_ = pw.Close()
		}
		b.ReportMetric(float64(rows*int64(b.N))/b.Elapsed().Seconds(), "rows/s")
	})
}
