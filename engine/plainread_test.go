//go:build duckdb_arrow

package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/flightgw/flightgw/catalogs"
)

// plainProps are writer options whose files the plain reader reads: no
// dictionary, as the gateway's files of columns that a dictionary does
// not shrink.
var plainProps = []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}

// plainFile tells whether the plain reader reads every column chunk of a
// file.
func plainFile(t *testing.T, path string) bool {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	s := fileSchema(t, path)
	var cols []string
	for _, fl := range s.Fields() {
		cols = append(cols, fl.Name)
	}
	df, ok := directFileOf(pf, path, cols, s)
	if !ok {
		t.Fatalf("%s: not a file the direct path reads", path)
	}
	u := directUnit{file: df}
	for rg := range df.meta.NumRowGroups() {
		u.rowGroups = append(u.rowGroups, rg)
	}
	return plainReadable(df, u)
}

// plainTable is rows of every type the plain reader reads, with nulls,
// empty strings, values of 64 KiB and more, and invalid-free UTF-8.
func plainTable(t *testing.T, rows int) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(3).(*array.Float32Builder).Append(float32(i) / 7)
		// Nulls in runs (RLE levels) and scattered (bit-packed levels).
		if i%5 == 0 || (i/1000)%9 == 4 {
			for c := range schema.Fields() {
				if c != 0 && c != 3 {
					b.Field(c).AppendNull()
				}
			}
			continue
		}
		b.Field(1).(*array.Int32Builder).Append(int32(i) - 1<<20)
		b.Field(2).(*array.Uint32Builder).Append(uint32(i) * 2654435761)
		b.Field(4).(*array.Float64Builder).Append(float64(i) / 3)
		var tag string
		switch {
		case i%7 == 0:
			tag = "" // empty, not null
		case i%10_001 == 1:
			tag = strings.Repeat("é", 40_000) // 80 KB in one value
		default:
			tag = fmt.Sprintf("t-%d-%s", i, strings.Repeat("ü", i%5))
		}
		b.Field(5).(*array.StringBuilder).Append(tag)
		b.Field(6).(*array.BinaryBuilder).Append([]byte{byte(i), 0, byte(i >> 8)}[:i%4%3])
		b.Field(7).(*array.BooleanBuilder).Append(i%3 == 1)
		b.Field(8).(*array.Date32Builder).Append(arrow.Date32(i % 40_000))
		b.Field(9).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1_000_003))
	}
	return b.NewRecordBatch()
}

// TestPlainReaderMatches: files the plain reader reads (data pages v1
// and v2, small pages that end within batches, row groups smaller than
// a batch, codecs) read direct give the rows DuckDB's native path gives,
// and the very arrays pqarrow decodes; a file with dictionary pages is
// left to pqarrow, with the same rows.
func TestPlainReaderMatches(t *testing.T) {
	const rows = 140_001 // over two batches, and odd
	rec := plainTable(t, rows)
	defer rec.Release()
	small := parquet.WithDataPageSize(4 << 10)
	for _, tc := range []struct {
		name  string
		rg    int
		plain bool
		opts  []parquet.WriterProperty
	}{
		{"v2 pages", 70_000, true, plainProps},
		{"v1 small pages", 50_000, true, append([]parquet.WriterProperty{small, parquet.WithDataPageVersion(parquet.DataPageV1)}, plainProps...)},
		{"v2 small pages, small row groups", 3_001, true, append([]parquet.WriterProperty{small}, plainProps...)},
		{"uncompressed v1", 70_000, true, append([]parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Uncompressed),
			parquet.WithDataPageVersion(parquet.DataPageV1)}, plainProps...)},
		{"snappy", 70_000, true, append([]parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy)}, plainProps...)},
		{"dictionary pages", 70_000, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNativeFixture(t)
			files := []string{filepath.Join(f.root, "p", "data", "a.parquet")}
			writeFile(t, files[0], rec, tc.rg, tc.opts...)
			if got := plainFile(t, files[0]); got != tc.plain {
				t.Fatalf("plain reader %v, want %v", got, tc.plain)
			}
			f.plain.files["p"] = files
			f.scan.tables["p"] = emptyOf(t, files[0])
			for _, q := range []string{`SELECT * FROM p`, `SELECT tag, ok, id FROM p LIMIT 70000 OFFSET 65000`, `SELECT raw, day FROM p OFFSET 139990`} {
				direct, native := f.runBoth(t, q)
				if !direct.scans[0].Direct {
					t.Fatalf("%s: not direct", q)
				}
				if len(direct.rows) != len(native.rows) {
					t.Fatalf("%s: %d rows direct, %d native", q, len(direct.rows), len(native.rows))
				}
				for i := range direct.rows {
					if direct.rows[i] != native.rows[i] {
						t.Fatalf("%s: row %d: direct %.200q, native %.200q", q, i, direct.rows[i], native.rows[i])
					}
				}
			}
			// The arrays, buffer for buffer, against pqarrow's.
			got := readUnits(t, f, files[0], true)
			want := readUnits(t, f, files[0], false)
			if len(got) != len(want) {
				t.Fatalf("%d batches plain, %d pqarrow", len(got), len(want))
			}
			for i := range got {
				if !array.RecordEqual(got[i], want[i]) {
					t.Fatalf("batch %d differs from pqarrow's", i)
				}
				got[i].Release()
				want[i].Release()
			}
		})
	}
}

// readUnits is every batch of a file's one unit read by the direct scan,
// with the plain reader on or off.
func readUnits(t *testing.T, f *nativeFixture, path string, plain bool) []arrow.RecordBatch {
	t.Helper()
	old := plainReads
	plainReads = plain
	defer func() { plainReads = old }()
	s := fileSchema(t, path)
	var cols []string
	for _, fl := range s.Fields() {
		cols = append(cols, fl.Name)
	}
	files, ok := directFiles([]string{path}, cols, s)
	if !ok {
		t.Fatal("not a direct file")
	}
	d := newDirectScan(t.Context(), catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "p"}, s, files, directWindow{take: -1}, f.eng.pool, 1)
	defer d.stop()
	var out []arrow.RecordBatch
	for {
		b, err := d.nextBatch()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return out
		}
		out = append(out, b)
	}
}

// TestLevels: the definition levels decoder reads RLE and bit-packed runs
// into a bitmap at any bit, and refuses levels that end early or exceed 1.
func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		name string
		buf  []byte
		n    int
		want string // the bits, or the error
	}{
		{"rle ones", []byte{10 << 1, 1}, 10, "1111111111"},
		{"rle zeros then ones", []byte{3 << 1, 0, 2 << 1, 1}, 5, "00011"},
		{"bit-packed", []byte{1<<1 | 1, 0b10110101}, 8, "10101101"},
		{"bit-packed, last group cut", []byte{2<<1 | 1, 0xff}, 8, "11111111"},
		{"bit-packed then rle", []byte{1<<1 | 1, 0x0f, 4 << 1, 0}, 12, "111100000000"},
		{"empty run skipped", []byte{0, 1, 2 << 1, 1}, 2, "11"},
		{"end early", []byte{3 << 1, 1}, 4, "error: the levels end"},
		{"cut packed", []byte{2<<1 | 1, 0xff}, 9, "error: the levels end"},
		{"level 2", []byte{3 << 1, 2}, 3, "error: a level of 2"},
		{"no value", []byte{3 << 1}, 3, "error: the levels end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, at := range []int{0, 5} {
				l := levels{buf: tc.buf}
				bm := make([]byte, 4)
				// Two reads: a run may end within either.
				n1, err := l.read(bm, at, tc.n/2)
				var n2 int
				if err == nil {
					n2, err = l.read(bm, at+tc.n/2, tc.n-tc.n/2)
				}
				var got string
				if err != nil {
					got = "error: " + err.Error()
				} else {
					for i := range tc.n {
						got += map[bool]string{false: "0", true: "1"}[bitutil.BitIsSet(bm, at+i)]
					}
					if c := strings.Count(got, "1"); c != n1+n2 {
						t.Errorf("at %d: %d set counted, %d set", at, n1+n2, c)
					}
					if bitutil.CountSetBits(bm, 0, 32) != n1+n2 {
						t.Errorf("at %d: bits outside the rows set", at)
					}
				}
				if !strings.HasPrefix(got, tc.want) {
					t.Errorf("at %d: %s, want %s", at, got, tc.want)
				}
			}
		})
	}
}

// fuzzColumns are the kinds of column FuzzPlainPage decodes.
var fuzzColumns = []struct {
	typ   arrow.DataType
	width int
}{
	{arrow.PrimitiveTypes.Int32, 4},
	{arrow.PrimitiveTypes.Int64, 8},
	{arrow.BinaryTypes.String, 0},
	{arrow.FixedWidthTypes.Boolean, plainBits},
}

// refPage decodes n rows of a page the simple way: every level, then the
// values of the valid rows.
func refPage(defs, vals []byte, n, width int, optional bool) (valid []bool, values [][]byte, err error) {
	valid = make([]bool, n)
	if !optional {
		for i := range valid {
			valid[i] = true
		}
	}
	for i := 0; optional && i < n; {
		h, w := binary.Uvarint(defs)
		if w <= 0 {
			return nil, nil, errors.New("levels end")
		}
		defs = defs[w:]
		if h&1 == 1 {
			nb := min(h>>1, uint64(len(defs)))
			for b := 0; b < int(nb)*8 && i < n; b, i = b+1, i+1 {
				valid[i] = defs[b/8]>>(b%8)&1 == 1
			}
			defs = defs[nb:]
			continue
		}
		if len(defs) == 0 || defs[0] > 1 {
			return nil, nil, errors.New("bad run")
		}
		for r := uint64(0); r < h>>1 && i < n; r, i = r+1, i+1 {
			valid[i] = defs[0] == 1
		}
		defs = defs[1:]
	}
	bit := 0
	for i := range n {
		switch {
		case !valid[i]:
			values = append(values, nil)
		case width == plainBits:
			if bit >= len(vals)*8 {
				return nil, nil, errors.New("values end")
			}
			values = append(values, []byte{vals[bit/8] >> (bit % 8) & 1})
			bit++
		case width > 0:
			if len(vals) < width {
				return nil, nil, errors.New("values end")
			}
			values, vals = append(values, vals[:width]), vals[width:]
		default:
			if len(vals) < 4 || uint64(binary.LittleEndian.Uint32(vals)) > uint64(len(vals)-4) {
				return nil, nil, errors.New("values end")
			}
			l := binary.LittleEndian.Uint32(vals)
			values, vals = append(values, vals[4:4+l]), vals[4+l:]
		}
	}
	return valid, values, nil
}

// FuzzPlainPage: the plain reader decodes any page body (definition
// levels and PLAIN values of each kind of column) as the simple reference
// does, in two reads, and refuses what the reference refuses, naming the
// column; it never panics nor reads past the page.
func FuzzPlainPage(f *testing.F) {
	f.Add([]byte{20 << 1, 1}, []byte(strings.Repeat("abcdefgh", 30)), uint16(20), uint8(1), true)
	f.Add([]byte{1<<1 | 1, 0b01100101}, []byte{1, 0, 0, 0, 'a', 0, 0, 0, 0, 2, 0, 0, 0, 'b', 'c', 1, 0, 0, 0, 'd'}, uint16(8), uint8(2), true)
	f.Add([]byte{}, []byte{3, 0, 0, 0, 'x', 'y', 'z', 0xff, 0xff, 0, 0}, uint16(2), uint8(2), false)
	f.Add([]byte{4 << 1, 0, 4 << 1, 1}, []byte{0b1010}, uint16(8), uint8(3), true)
	f.Add([]byte{}, []byte{1, 2, 3, 4, 5, 6, 7}, uint16(2), uint8(0), false)
	f.Add([]byte{1<<1 | 1, 0b01010101, 2 << 1, 0}, bytes.Repeat([]byte{0xAB}, 32), uint16(10), uint8(1), true)
	// Rows enough for pooled buffers (4 KiB up), every other one null.
	half := binary.AppendUvarint(nil, 250<<1|1)
	half = append(half, bytes.Repeat([]byte{0b01010101}, 250)...)
	f.Add(half, bytes.Repeat([]byte{0xAB}, 8000), uint16(1999), uint8(1), true)
	f.Add(half, bytes.Repeat([]byte{0xAB}, 8000), uint16(1999), uint8(0), true)
	f.Add(half, bytes.Repeat([]byte{3, 0, 0, 0, 'a', 'b', 'c'}, 1000), uint16(1999), uint8(2), true)
	f.Add(half, bytes.Repeat([]byte{0xAB}, 125), uint16(1999), uint8(3), true)
	f.Fuzz(func(t *testing.T, defs, vals []byte, rows uint16, kind uint8, optional bool) {
		n := int(rows%3000) + 1
		k := fuzzColumns[int(kind)%len(fuzzColumns)]
		wantValid, wantVals, wantErr := refPage(defs, vals, n, k.width, optional)
		// A pool of buffers that held other bytes, as the engine's does.
		pool := newBufferPool(1 << 20)
		for c := class(minPooled); c <= class(3001*8); c++ {
			held := [][]byte{pool.allocate(1 << c), pool.allocate(1 << c)}
			for _, b := range held {
				for i := range b {
					b[i] = 0xAB
				}
				pool.Free(b)
			}
		}
		c := &plainColumn{name: "col", typ: k.typ, width: k.width, optional: optional, mem: unzeroed{pool},
			left: n, defs: levels{buf: defs}, vals: vals}
		var got []arrow.Array
		var err error
		for _, m := range []int{n / 2, n - n/2} {
			if m == 0 {
				continue
			}
			var a arrow.Array
			if a, err = c.read(m); err != nil {
				break
			}
			defer a.Release()
			got = append(got, a)
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, the reference's %v", err, wantErr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "column col") {
				t.Fatalf("%v: does not name the column", err)
			}
			return
		}
		row := 0
		for _, a := range got {
			for i := range a.Len() {
				if a.IsValid(i) != wantValid[row] {
					t.Fatalf("row %d: valid %v, want %v", row, a.IsValid(i), wantValid[row])
				}
				var v []byte
				switch a := a.(type) {
				case *array.Int32:
					v = binary.LittleEndian.AppendUint32(nil, uint32(a.Value(i)))
				case *array.Int64:
					v = binary.LittleEndian.AppendUint64(nil, uint64(a.Value(i)))
				case *array.String:
					v = []byte(a.Value(i))
				case *array.Boolean:
					v = []byte{map[bool]byte{false: 0, true: 1}[a.Value(i)]}
				}
				switch {
				case wantValid[row] && !bytes.Equal(v, wantVals[row]):
					t.Fatalf("row %d: %x, want %x", row, v, wantVals[row])
				case !wantValid[row] && k.width != 0 && bytes.Count(v, []byte{0}) != len(v):
					t.Fatalf("row %d: null with value bytes %x, want zeros", row, v)
				case !wantValid[row] && k.width == 0 && len(v) != 0:
					t.Fatalf("row %d: null with %d bytes", row, len(v))
				}
				if bm := a.NullBitmapBytes(); a.NullN() > 0 && i == a.Len()-1 && bitutil.CountSetBits(bm, 0, len(bm)*8) != a.Len()-a.NullN() {
					t.Fatalf("a bitmap with bits set past its %d rows", a.Len())
				}
				row++
			}
		}
		if row != n {
			t.Fatalf("%d rows, want %d", row, n)
		}
	})
}
