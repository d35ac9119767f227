//go:build duckdb_arrow

package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// runBoth runs q over the plain plans with the direct path on and off.
func (f *nativeFixture) runBoth(t *testing.T, q string) (direct, native *result) {
	t.Helper()
	direct, err := f.run(t, f.plain, q, nil)
	if err != nil {
		t.Fatalf("direct on: %v", err)
	}
	directScans = false
	defer func() { directScans = true }()
	native, err = f.run(t, f.plain, q, nil)
	if err != nil {
		t.Fatalf("direct off: %v", err)
	}
	return direct, native
}

// TestDirectMatchesNative: a query that only lists columns of a table
// with a plain plan is read directly from its files, with the rows, in
// their order, and the result schema (names, types, nullability,
// metadata) DuckDB gives on the native path; any other query, or a column
// of a type outside the direct path's, is left to DuckDB.
func TestDirectMatchesNative(t *testing.T) {
	f := newNativeFixture(t)
	for _, tc := range []struct {
		q      string
		direct bool
	}{
		{`SELECT * FROM sales`, true},
		{`SELECT s.* FROM lake.default.sales AS s`, true},
		{`SELECT amount, ID, sales.region AS r, id FROM sales`, true},
		{`SELECT id, ts, day, tag, ok, n FROM typed`, true},
		{`SELECT * FROM typed`, false}, // a decimal column
		{`SELECT id FROM sales WHERE id > 1`, false},
		{`SELECT id FROM sales LIMIT 2`, true},
		{`SELECT region, id FROM sales LIMIT 2 OFFSET 1`, true},
		{`SELECT id FROM sales LIMIT 0`, true},
		{`SELECT id FROM sales LIMIT 10%`, false},
		{`SELECT id FROM sales LIMIT 1 + 1`, false},
		{`SELECT id FROM sales ORDER BY id LIMIT 2`, false},
		{`SELECT id FROM sales ORDER BY id DESC`, false},
		{`SELECT DISTINCT region FROM sales`, false},
		{`SELECT id + 1 FROM sales`, false},
		{`SELECT * EXCLUDE (id) FROM sales`, false},
		{`SELECT * FROM sales t(a, b)`, false},
		{`SELECT * FROM sales, regions`, false},
		{`WITH s AS (SELECT * FROM sales) SELECT * FROM s`, false},
		{`SELECT region FROM sales GROUP BY region`, false},
		{`SELECT id FROM sales USING SAMPLE 50%`, false},
	} {
		t.Run(tc.q, func(t *testing.T) {
			direct, native := f.runBoth(t, tc.q)
			for _, s := range direct.scans {
				if s.Direct != tc.direct || !s.Native {
					t.Errorf("scan of %s: direct %v native %v, want direct %v", s.Table, s.Direct, s.Native, tc.direct)
				}
			}
			for _, s := range native.scans {
				if s.Direct {
					t.Errorf("scan of %s is direct with the direct path off", s.Table)
				}
			}
			if tc.q == `SELECT id FROM sales USING SAMPLE 50%` {
				return // a sample's rows differ from run to run
			}
			if !tc.direct {
				// DuckDB's order, which a GROUP BY does not fix.
				slices.Sort(direct.rows)
				slices.Sort(native.rows)
			}
			if strings.Join(direct.rows, "\n") != strings.Join(native.rows, "\n") {
				t.Errorf("rows differ:\ndirect %q\nnative %q", direct.rows, native.rows)
			}
			if !direct.schema.Equal(native.schema) || direct.schema.String() != native.schema.String() {
				t.Errorf("schemas differ:\ndirect %s\nnative %s", direct.schema, native.schema)
			}
		})
	}
}

// writeRowGroups writes n rows of (id, x, tag, ts, maybe) with nulls as
// one Parquet file of row groups of rg rows, ZSTD, as the gateway's
// writers do.
func writeRowGroups(t *testing.T, path string, first, n, rg int) {
	t.Helper()
	writeTagged(t, path, first, n, rg, func(i int) string { return strings.Repeat("é", i%20) })
}

// writeTagged is writeRowGroups with the tag of row i given by tag, and
// the writer's defaults overridden by opts.
func writeTagged(t *testing.T, path string, first, n, rg int, tag func(int) string, opts ...parquet.WriterProperty) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%7 == 0 {
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
			continue
		}
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 3)
		b.Field(2).(*array.StringBuilder).Append(tag(i))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1_000_003))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	writeFile(t, path, rec, rg, opts...)
}

// writeFile writes rec as one Parquet file of row groups of rg rows, ZSTD,
// as the gateway's writers do, the defaults overridden by opts.
func writeFile(t *testing.T, path string, rec arrow.RecordBatch, rg int, opts ...parquet.WriterProperty) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), out,
		parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithMaxRowGroupLength(int64(rg))}, opts...)...),
		pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDirectRowGroupsInOrder: row groups decoded by several workers come
// out in the files' order, batch by batch as on the native path, and a
// stream closed or cancelled early gives every batch buffer back.
func TestDirectRowGroupsInOrder(t *testing.T) {
	f := newNativeFixture(t)
	files := []string{filepath.Join(f.root, "wide", "data", "a.parquet"), filepath.Join(f.root, "wide", "data", "b.parquet")}
	writeRowGroups(t, files[0], 0, 70_000, 3_000)
	writeRowGroups(t, files[1], 70_000, 90_000, 7_000)
	f.plain.files["wide"] = files
	f.scan.tables["wide"] = emptyOf(t, files[0])
	old := directUnitRows
	directUnitRows = 1 // every row group a unit of its own, round robin over the workers
	defer func() { directUnitRows = old }()

	for _, tc := range []struct {
		q    string
		rows int
	}{
		{`SELECT * FROM wide`, 160_000},
		{`SELECT tag, id, ts FROM wide`, 160_000},
		// Windows across row groups, batches and the two files.
		{`SELECT * FROM wide LIMIT 75000 OFFSET 2999`, 75_000},
		{`SELECT ts, id FROM wide LIMIT 70001`, 70_001},
		{`SELECT id FROM wide LIMIT 10 OFFSET 159995`, 5},
		{`SELECT id FROM wide LIMIT 5 OFFSET 200000`, 0},
		{`SELECT tag FROM wide OFFSET 69999`, 90_001},
	} {
		q := tc.q
		direct, native := f.runBoth(t, q)
		if !direct.scans[0].Direct {
			t.Fatalf("%s: not direct", q)
		}
		if len(direct.rows) != tc.rows || strings.Join(direct.rows, "\n") != strings.Join(native.rows, "\n") {
			t.Fatalf("%s: %d rows direct, %d native, or not the same", q, len(direct.rows), len(native.rows))
		}
		if !direct.schema.Equal(native.schema) {
			t.Fatalf("%s: schemas differ:\ndirect %s\nnative %s", q, direct.schema, native.schema)
		}
	}

	before := f.eng.pool.outstanding()
	r, err := f.eng.Query(context.Background(), `SELECT * FROM wide`, nil, f.resolver(f.plain))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() || !r.Scans()[0].Direct {
		t.Fatalf("first batch: %v, direct %v", r.Err(), r.Scans()[0].Direct)
	}
	r.Close()
	if got := f.eng.pool.outstanding(); got != before {
		t.Errorf("after an early close %d bytes of batch buffers are still out, %d before", got, before)
	}

	ctx, cancel := context.WithCancel(context.Background())
	r, err = f.eng.Query(ctx, `SELECT * FROM wide`, nil, f.resolver(f.plain))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatalf("first batch: %v", r.Err())
	}
	cancel()
	for r.Next() {
	}
	if !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("after cancel: %v, want canceled", r.Err())
	}
	r.Close()
	if got := f.eng.pool.outstanding(); got != before {
		t.Errorf("after a cancel %d bytes of batch buffers are still out, %d before", got, before)
	}
}

// emptyOf is an empty batch of the schema of a Parquet file.
func emptyOf(t *testing.T, path string) arrow.RecordBatch {
	t.Helper()
	s := fileSchema(t, path)
	var cols []arrow.Field
	for _, fl := range s.Fields() {
		cols = append(cols, arrow.Field{Name: fl.Name, Type: fl.Type, Nullable: fl.Nullable})
	}
	schema := arrow.NewSchema(cols, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	return b.NewRecordBatch()
}

// TestDirectRefusesInvalidUTF8: a string column whose file holds bytes
// that are not UTF-8 (another writer's file; a Go string may hold any
// bytes) is refused as DuckDB's native path refuses it, naming the table
// and the column, never sent on as an Arrow string.
func TestDirectRefusesInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain bool // read by the plain reader, not pqarrow
		opts  []parquet.WriterProperty
	}{
		{"dictionary", false, nil},
		{"plain", true, plainProps},
	} {
		t.Run(tc.name, func(t *testing.T) { refusesInvalidUTF8(t, tc.plain, tc.opts...) })
	}
}

func refusesInvalidUTF8(t *testing.T, plain bool, opts ...parquet.WriterProperty) {
	f := newNativeFixture(t)
	files := []string{filepath.Join(f.root, "bad", "data", "a.parquet")}
	// Row 5000's tag is two halves of one "é": each value alone is invalid,
	// their concatenation valid.
	writeTagged(t, files[0], 0, 10_000, 4_000, func(i int) string {
		switch i {
		case 5000:
			return "x\xc3"
		case 5001:
			return "\xa9y"
		}
		return "ok"
	}, opts...)
	if got := plainFile(t, files[0]); got != plain {
		t.Fatalf("plain reader %v, want %v", got, plain)
	}
	f.plain.files["bad"] = files
	f.scan.tables["bad"] = emptyOf(t, files[0])
	res, err := f.run(t, f.plain, `SELECT tag, id FROM bad`, nil)
	if err == nil {
		t.Fatalf("direct: %d rows of invalid UTF-8 read without an error", len(res.rows))
	}
	if !strings.Contains(err.Error(), "tag") || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("direct: %v, want an error naming the column and UTF-8", err)
	}
	directScans = false
	defer func() { directScans = true }()
	if _, err := f.run(t, f.plain, `SELECT tag, id FROM bad`, nil); err == nil {
		t.Error("native: the invalid UTF-8 read without an error (the direct path's refusal would differ)")
	}
}

// TestDirectLastBatchOfAUnit: with the default unit size, every column
// set of two files read direct is what DuckDB reads, in order. It once
// failed on SELECT tag at row 135536 (another batch's offsets as the
// strings of file b's second batch): not the direct path's fault, but
// render's, whose rows of one string column were views of batch buffers
// that the native run then reused from the pool
// (TestRenderOutlivesTheBatch).
func TestDirectLastBatchOfAUnit(t *testing.T) {
	f := newNativeFixture(t)
	files := []string{filepath.Join(f.root, "wide", "data", "a.parquet"), filepath.Join(f.root, "wide", "data", "b.parquet")}
	writeRowGroups(t, files[0], 0, 70_000, 3_000)
	writeRowGroups(t, files[1], 70_000, 90_000, 7_000)
	f.plain.files["wide"] = files
	f.scan.tables["wide"] = emptyOf(t, files[0])
	for _, q := range []string{`SELECT tag FROM wide`, `SELECT id FROM wide`, `SELECT tag, id FROM wide`, `SELECT * FROM wide`,
		// Windows within units of several batches: across a's two
		// batches and into b; from within b's first batch to its end.
		`SELECT tag, id FROM wide LIMIT 66000 OFFSET 65000`, `SELECT id, tag FROM wide OFFSET 135000`} {
		direct, native := f.runBoth(t, q)
		if !direct.scans[0].Direct {
			t.Fatalf("%s: not direct", q)
		}
		if len(direct.rows) != len(native.rows) {
			t.Fatalf("%s: %d rows direct, %d native", q, len(direct.rows), len(native.rows))
		}
		for i := range direct.rows {
			if direct.rows[i] != native.rows[i] {
				t.Fatalf("%s: row %d: direct %q, native %q", q, i, direct.rows[i], native.rows[i])
			}
		}
	}
}

// TestDirectSendsNoStaleBytes: the direct path decodes into pooled
// buffers that held other batches' bytes, unzeroed where the decoders
// write (decodeMem); no byte of an earlier batch reaches a client: not in
// the slots of null rows, nor past a column's last row or value in what
// the IPC writer sends. The pool is filled with buffers of 0xAB first,
// a byte the table's own IPC body never holds.
func TestDirectSendsNoStaleBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain bool // read by the plain reader, not pqarrow
		opts  []parquet.WriterProperty
	}{
		{"dictionary", false, nil},
		{"plain", true, plainProps},
		{"plain v1 pages", true, append([]parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV1)}, plainProps...)},
	} {
		t.Run(tc.name, func(t *testing.T) { sendsNoStaleBytes(t, tc.plain, tc.opts...) })
	}
}

func sendsNoStaleBytes(t *testing.T, plain bool, opts ...parquet.WriterProperty) {
	f := newNativeFixture(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	// Odd: an int32 column ends within an 8-byte word; over 32Ki rows: a
	// batch's bitmaps are of a pooled size (4 KiB up), so stale too.
	const rows = 70_001
	for i := range rows {
		v := i % 100
		b.Field(0).(*array.Int64Builder).Append(int64(v))
		if i%3 == 0 {
			for c := 1; c < len(schema.Fields()); c++ {
				b.Field(c).AppendNull()
			}
			continue
		}
		b.Field(1).(*array.Int32Builder).Append(int32(v))
		b.Field(2).(*array.Float64Builder).Append(float64(v))
		// Few string bytes in all: no offset holds 0xAB.
		b.Field(3).(*array.StringBuilder).Append(strings.Repeat("t", min(1, 150/(i+1))))
		b.Field(4).(*array.BooleanBuilder).Append(v%2 == 0)
		b.Field(5).(*array.Date32Builder).Append(arrow.Date32(v))
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if i := bytes.IndexByte(ipcBody(t, rec), 0xAB); i >= 0 {
		t.Fatalf("the table's own IPC body holds 0xAB at %d: pick other values", i)
	}
	files := []string{filepath.Join(f.root, "stale", "data", "a.parquet")}
	writeFile(t, files[0], rec, 7_000, opts...)
	if got := plainFile(t, files[0]); got != plain {
		t.Fatalf("plain reader %v, want %v", got, plain)
	}
	f.plain.files["stale"] = files
	f.scan.tables["stale"] = emptyOf(t, files[0])

	// Buffers of every pooled size up to 4 MiB, each full of 0xAB: more
	// of each than the read takes (40 MiB in all, within the pool's
	// limit).
	for c := class(minPooled); c <= 22; c++ {
		var held [][]byte
		for range max(2, 16>>max(0, c-20)) {
			buf := f.eng.pool.allocate(1 << c)
			for i := range buf {
				buf[i] = 0xAB
			}
			held = append(held, buf)
		}
		for _, buf := range held {
			f.eng.pool.Free(buf)
		}
	}
	r, err := f.eng.Query(context.Background(), `SELECT * FROM stale`, nil, f.resolver(f.plain))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r.Next() {
		if !r.Scans()[0].Direct {
			t.Fatal("not read on the direct path")
		}
		body := ipcBody(t, r.RecordBatch())
		if i := bytes.IndexByte(body, 0xAB); i >= 0 {
			t.Fatalf("batch %d: the IPC body holds a stale 0xAB at byte %d of %d", len(got), i, len(body))
		}
		got = append(got, render(r.RecordBatch())...)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if want := render(rec); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%d rows read, %d written, or not the same", len(got), len(want))
	}
}

// TestScrub: scrub clears every byte a decoder may leave stale and the
// IPC writer sends (the slots of null rows, bits past the last row, a
// buffer's bytes past its rows' values) and no value: each column of a
// batch is given buffers whose unwritten bytes are 0xAB, as a recycled
// buffer's are.
func TestScrub(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	rec := batch(t, schema, `[
		{"n":1,"x":1.5,"tag":"a","ok":true,"day":"2024-03-01"},
		{"n":null,"x":null,"tag":null,"ok":null,"day":null},
		{"n":3,"x":2.5,"tag":"ccc","ok":false,"day":"2024-03-03"}]`)
	defer rec.Release()
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		cols[i] = stale(c)
		defer cols[i].Release()
	}
	got := array.NewRecordBatch(schema, cols, rec.NumRows())
	defer got.Release()
	if bytes.IndexByte(ipcBody(t, got), 0xAB) < 0 {
		t.Fatal("the stale batch's IPC body holds no 0xAB: the test tests nothing")
	}
	for _, c := range cols {
		scrub(c)
	}
	if i := bytes.IndexByte(ipcBody(t, got), 0xAB); i >= 0 {
		t.Errorf("after scrub the IPC body holds a stale 0xAB at byte %d", i)
	}
	if g, w := strings.Join(render(got), "\n"), strings.Join(render(rec), "\n"); g != w {
		t.Errorf("scrub changed the values:\n%s\nwant\n%s", g, w)
	}
}

// stale is a with each buffer copied into one of 0xAB bytes as long as
// the IPC writer sends whole (its length rounded up to 64), the bits
// past its last row set, and the value slots of its null rows 0xAB.
func stale(a arrow.Array) arrow.Array {
	d := a.Data()
	bufs := make([]*memory.Buffer, len(d.Buffers()))
	for k, b := range d.Buffers() {
		if b == nil {
			continue
		}
		n := b.Len()
		out := bytes.Repeat([]byte{0xAB}, (n+63)/64*64)
		copy(out, b.Bytes())
		bufs[k] = memory.NewBufferBytes(out)
	}
	end := d.Offset() + d.Len()
	setFrom := func(b []byte) {
		for i := end; i < len(b)*8; i++ {
			bitutil.SetBit(b, i)
		}
	}
	if bufs[0] != nil {
		setFrom(bufs[0].Bytes())
	}
	switch t := d.DataType().(type) {
	case *arrow.BooleanType:
		setFrom(bufs[1].Bytes())
	case *arrow.StringType:
	case arrow.FixedWidthDataType:
		w := t.BitWidth() / 8
		for i := range d.Len() {
			if a.IsNull(i) {
				copy(bufs[1].Bytes()[(d.Offset()+i)*w:], bytes.Repeat([]byte{0xAB}, w))
			}
		}
	}
	nd := array.NewData(d.DataType(), d.Len(), bufs, nil, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// ipcBody is the body of rec's IPC message: every buffer byte the IPC
// writer sends, and its padding.
func ipcBody(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	p, err := ipc.GetRecordBatchPayload(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	var body bytes.Buffer
	if err := p.SerializeBody(&body); err != nil {
		t.Fatal(err)
	}
	return body.Bytes()
}

// TestIsASCII: a byte of 0x80 or above anywhere in a buffer, at every
// offset of each word of the four-word steps and of the tail, makes it
// not ASCII.
func TestIsASCII(t *testing.T) {
	for n := range 100 {
		b := []byte(strings.Repeat("x", n))
		if !isASCII(b) {
			t.Fatalf("%d ASCII bytes: not ASCII", n)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xc3, 0xff} {
				b[i] = c
				if isASCII(b) {
					t.Fatalf("%d bytes with 0x%x at %d: ASCII", n, c, i)
				}
				b[i] = 'x'
			}
		}
	}
}
