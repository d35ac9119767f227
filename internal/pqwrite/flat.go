package pqwrite

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// A table's rows are mostly flat columns of numbers, times and strings
// with no dictionary (PlainColumns turns it off for the high-cardinality
// ones, DeltaPackedColumns for the ordered integers). pqarrow writes such a
// column through layers made for every case: each value batch is copied
// into an encoder's pooled buffer, and into the page, and the buffer is
// zeroed on its way back to the pool; string statistics compare value by
// value through an interface; the levels go through their own encoder.
// On the Delta ingest benchmark that was a third of the gateway's CPU
// beside zstd. FlatWriter writes those files itself: each column's page
// assembled in one buffer (definition levels from the validity bitmap as
// it is, values appended as they lie in the Arrow buffers), compressed with
// the codec the properties name, its header written by hand (thrift
// compact), the column chunks of a row group buffered until it closes.
// What it does not write it refuses at NewFlatWriter, and the caller
// uses pqarrow: nested or dictionary columns, types pqarrow converts
// (small integers, unsigned ones, decimals, seconds), INT96 timestamps,
// V2 pages, page indexes, bloom filters, encryption. The schema, the
// column-chunk metadata and the footer are arrow-go's (pqarrow.ToParquet,
// metadata builders), and so are the statistics (its typed statistics,
// updated per batch), so a file differs from pqarrow's only in its page
// boundaries and in carrying no page-level statistics, which readers do not
// need (the footer's are there).
type FlatWriter struct {
	schema  *arrow.Schema
	sink    *CountWriter
	props   *parquet.WriterProperties
	meta    *metadata.FileMetaDataBuilder
	cols    []*flatCol
	rg      *metadata.RowGroupMetaDataBuilder
	rgRows  int64
	ordinal int16
	md      *metadata.FileMetaData
	err     error
	closed  bool
}

// CountWriter counts the bytes that reach W: a file's offset of what
// comes next, its size once complete.
type CountWriter struct {
	W io.Writer
	N int64
}

func (c *CountWriter) Write(b []byte) (int, error) {
	n, err := c.W.Write(b)
	c.N += int64(n)
	return n, err
}

// flatKind is how a column's Arrow values map to its Parquet values.
type flatKind uint8

const (
	kindBool flatKind = iota
	kindInt32
	kindInt64
	kindFloat32
	kindFloat64
	kindBytes32 // string, binary: int32 offsets
	kindBytes64 // large_string, large_binary: int64 offsets
)

// width is the byte width of a fixed-width kind's values.
func (k flatKind) width() int {
	switch k {
	case kindInt32, kindFloat32:
		return 4
	case kindInt64, kindFloat64:
		return 8
	}
	return 0
}

// ErrFlatNull is what a batch with a null in a required column gets.
var ErrFlatNull = errors.New("null value in a required column")

// NewFlatWriter returns a writer of record batches of sc to w, with props,
// the Arrow schema stored in the footer when storeSchema (as
// pqarrow.WithStoreSchema does); ok is false when sc or props need
// something only pqarrow writes. It writes the file's magic number.
func NewFlatWriter(sc *arrow.Schema, w io.Writer, props *parquet.WriterProperties, storeSchema bool) (fw *FlatWriter, ok bool, err error) {
	if props.FileEncryptionProperties() != nil {
		return nil, false, nil
	}
	psc, err := pqarrow.ToParquet(sc, props, pqarrow.DefaultWriterProps())
	if err != nil || psc.NumColumns() != sc.NumFields() {
		return nil, false, nil // pqarrow says why, or the schema is nested
	}
	cols := make([]*flatCol, sc.NumFields())
	for i, f := range sc.Fields() {
		c, ok := newFlatCol(f, psc.Column(i), props)
		if !ok {
			return nil, false, nil
		}
		cols[i] = c
	}
	kv := make(metadata.KeyValueMetadata, 0)
	md := sc.Metadata()
	for i := range md.Len() {
		kv.Append(md.Keys()[i], md.Values()[i])
	}
	if storeSchema {
		kv.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(sc, props.Allocator())))
	}
	fw = &FlatWriter{schema: sc, sink: &CountWriter{W: w}, props: props, cols: cols,
		meta: metadata.NewFileMetadataBuilder(psc, props, kv)}
	if _, err := fw.sink.Write([]byte("PAR1")); err != nil {
		return nil, true, err
	}
	return fw, true, nil
}

// newFlatCol is column descr of field f, or false when it is not flat, or
// needs a conversion, a dictionary or an encoding FlatWriter does not do.
func newFlatCol(f arrow.Field, descr *schema.Column, props *parquet.WriterProperties) (*flatCol, bool) {
	path := descr.Path()
	phys := descr.PhysicalType()
	// arrow-go never writes a boolean column with a dictionary, whatever
	// the properties say: neither does FlatWriter.
	dict := props.DictionaryEnabledFor(path) && phys != parquet.Types.Boolean
	if descr.MaxRepetitionLevel() != 0 || descr.MaxDefinitionLevel() > 1 ||
		dict || props.PageIndexEnabledFor(path) || props.BloomFilterEnabledFor(path) {
		return nil, false
	}
	var kind flatKind
	unitIs := func(want schema.TimeUnitType) bool {
		lt, ok := descr.LogicalType().(interface{ TimeUnit() schema.TimeUnitType })
		return ok && lt.TimeUnit() == want
	}
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		kind = kindBool
	case *arrow.Int32Type, *arrow.Date32Type:
		kind = kindInt32
	case *arrow.Time32Type:
		// Parquet has no TIME of seconds: pqarrow converts them.
		if t.Unit != arrow.Millisecond || !unitIs(schema.TimeUnitMillis) {
			return nil, false
		}
		kind = kindInt32
	case *arrow.Int64Type:
		kind = kindInt64
	case *arrow.Time64Type:
		if !unitIs(map[arrow.TimeUnit]schema.TimeUnitType{arrow.Microsecond: schema.TimeUnitMicros, arrow.Nanosecond: schema.TimeUnitNanos}[t.Unit]) {
			return nil, false
		}
		kind = kindInt64
	case *arrow.TimestampType:
		// Written as they are only when the column's unit is the
		// Arrow one (pqarrow turns seconds into milliseconds, or the
		// properties ask for a coercion or INT96).
		if t.Unit == arrow.Second || !unitIs(map[arrow.TimeUnit]schema.TimeUnitType{arrow.Millisecond: schema.TimeUnitMillis,
			arrow.Microsecond: schema.TimeUnitMicros, arrow.Nanosecond: schema.TimeUnitNanos}[t.Unit]) {
			return nil, false
		}
		kind = kindInt64
	case *arrow.Float32Type:
		kind = kindFloat32
	case *arrow.Float64Type:
		kind = kindFloat64
	case *arrow.StringType, *arrow.BinaryType:
		kind = kindBytes32
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		kind = kindBytes64
	default:
		return nil, false
	}
	want := map[flatKind]parquet.Type{kindBool: parquet.Types.Boolean, kindInt32: parquet.Types.Int32, kindInt64: parquet.Types.Int64,
		kindFloat32: parquet.Types.Float, kindFloat64: parquet.Types.Double, kindBytes32: parquet.Types.ByteArray, kindBytes64: parquet.Types.ByteArray}[kind]
	if phys != want {
		return nil, false
	}
	enc := props.EncodingFor(path)
	switch {
	case enc == parquet.Encodings.Plain:
	case enc == parquet.Encodings.DeltaBinaryPacked && (kind == kindInt32 || kind == kindInt64):
	case enc == parquet.Encodings.DeltaLengthByteArray && (kind == kindBytes32 || kind == kindBytes64):
	default:
		return nil, false
	}
	codec, err := compress.GetCodec(props.CompressionFor(path))
	if err != nil {
		return nil, false
	}
	c := &flatCol{name: f.Name, descr: descr, kind: kind, enc: enc, codec: codec, level: props.CompressionLevelFor(path),
		optional: descr.MaxDefinitionLevel() == 1, pageSize: int(max(props.DataPageSize(), 1<<10)),
		statsOn: props.StatisticsEnabledFor(path), maxStats: int(props.MaxStatsSizeFor(path))}
	c.v2 = props.DataPageVersion() == parquet.DataPageV2
	c.compressed = props.CompressionFor(path) != compress.Codecs.Uncompressed
	c.zstd = props.CompressionFor(path) == compress.Codecs.Zstd
	switch {
	case c.optional && enc == parquet.Encodings.Plain && !c.v2:
		c.gap = levelGap
	case enc == parquet.Encodings.DeltaLengthByteArray:
		c.gap = lengthGap
	}
	c.vals = make([]byte, c.gap)
	c.resetStats()
	return c, true
}

// levelGap is the room kept before a plain page's values for its
// definition levels when they are one run (4 bytes of length, at most 5
// of run header, 1 of value): the page is then compressed from where the
// values were appended, not copied after its levels.
const levelGap = 16

// lengthGap is the least room kept before a delta-length page's bytes for
// its levels and lengths: a page of 16K values of one length packs them
// in about 800 bytes. The gap grows to what the last page needed.
const lengthGap = 1 << 10

// valBytes is the size of the open page's plain values.
func (c *flatCol) valBytes() int { return len(c.vals) - c.gap }

// Write appends b's rows, starting a new row group whenever the open one
// reaches the properties' maximum length.
func (fw *FlatWriter) Write(b arrow.RecordBatch) error {
	if fw.err != nil {
		return fw.err
	}
	if fw.closed {
		return errors.New("parquet: write to a closed file")
	}
	if !b.Schema().Equal(fw.schema) {
		// Each column's buffers are read as its type's: a batch of
		// another schema is refused, as pqarrow refuses it.
		return fmt.Errorf("parquet: batch schema %s does not match the file's %s", b.Schema(), fw.schema)
	}
	maxRG := max(fw.props.MaxRowGroupLength(), 1)
	n := b.NumRows()
	for off := int64(0); off < n; {
		if fw.rgRows >= maxRG {
			if err := fw.FlushRowGroup(); err != nil {
				return err
			}
		}
		take := min(n-off, maxRG-fw.rgRows)
		for i, c := range fw.cols {
			if err := c.append(b.Column(i).Data(), int(off), int(take)); err != nil {
				fw.err = err
				return err
			}
		}
		fw.rgRows += take
		off += take
	}
	return nil
}

// RowGroupBytes is the open row group's size so far: its pages, and what
// its columns hold for their next page.
func (fw *FlatWriter) RowGroupBytes() int64 {
	var n int64
	for _, c := range fw.cols {
		n += int64(len(c.chunk) + c.valBytes() + 8*len(c.ints))
	}
	return n
}

// BytesWritten is what reached the file: the row groups closed so far.
func (fw *FlatWriter) BytesWritten() int64 { return fw.sink.N }

// FlushRowGroup closes the open row group, if it has rows: each column's
// last page, its pages written out, its metadata.
func (fw *FlatWriter) FlushRowGroup() error {
	if fw.err != nil || fw.rgRows == 0 {
		return fw.err
	}
	if err := fw.flushRowGroup(); err != nil {
		fw.err = err
		return err
	}
	return nil
}

func (fw *FlatWriter) flushRowGroup() error {
	rg := fw.meta.AppendRowGroup()
	start := fw.sink.N
	for _, c := range fw.cols {
		if err := c.flushPage(); err != nil {
			return err
		}
		cc := rg.NextColumnChunk()
		off := fw.sink.N
		if _, err := fw.sink.Write(c.chunk); err != nil {
			return err
		}
		if c.stats != nil {
			enc, err := c.stats.Encode()
			if err != nil {
				return fmt.Errorf("column %s: statistics: %w", c.name, err)
			}
			enc.ApplyStatSizeLimits(c.maxStats)
			enc.Signed = c.descr.SortOrder() == schema.SortSIGNED
			if enc.IsSet() {
				cc.SetStats(enc)
			}
		}
		info := metadata.ChunkMetaInfo{NumValues: c.nvalues, IndexPageOffset: -1, DataPageOffset: off,
			CompressedSize: int64(len(c.chunk)), UncompressedSize: c.uncompressed}
		if err := cc.Finish(info, false, false, metadata.EncodingStats{DataEncodingStats: map[parquet.Encoding]int32{c.enc: c.pages}}); err != nil {
			return err
		}
		c.chunk, c.nvalues, c.uncompressed, c.pages = c.chunk[:0], 0, 0, 0
		c.resetStats()
	}
	rg.SetNumRows(int(fw.rgRows))
	if err := rg.Finish(fw.sink.N-start, fw.ordinal); err != nil {
		return err
	}
	fw.ordinal++
	fw.rgRows = 0
	return nil
}

// Close writes the open row group and the footer. It does not close the
// writer under it.
func (fw *FlatWriter) Close() error {
	if fw.closed {
		return fw.err
	}
	fw.closed = true
	if err := fw.FlushRowGroup(); err != nil {
		return err
	}
	md, err := fw.meta.Finish()
	if err == nil {
		var n int64
		if n, err = md.WriteTo(fw.sink, nil); err == nil {
			var tail [8]byte
			binary.LittleEndian.PutUint32(tail[:4], uint32(n))
			copy(tail[4:], "PAR1")
			_, err = fw.sink.Write(tail[:])
		}
	}
	if err != nil {
		fw.err = err
		return err
	}
	fw.md = md
	return nil
}

// Metadata is the footer, once Close has written it.
func (fw *FlatWriter) Metadata() (*metadata.FileMetaData, error) {
	if fw.md == nil {
		return nil, errors.New("parquet: the file's footer is not written")
	}
	return fw.md, nil
}

// flatCol is one column of a FlatWriter: its open page, and the pages of
// the open row group.
type flatCol struct {
	name     string
	descr    *schema.Column
	kind     flatKind
	enc      parquet.Encoding
	codec    compress.Codec
	level    int
	optional bool
	v2       bool // DATA_PAGE_V2 pages
	// compressed is false for an uncompressed column, whose V2 pages
	// say so (is_compressed), as arrow-go's do.
	compressed bool
	// zstd columns store the pages zstd cannot shrink in raw blocks
	// (rawzstd.go): raw says this column's last judged page was one,
	// sinceProbe counts the pages stored raw since.
	zstd       bool
	raw        bool
	sinceProbe int
	pageSize   int
	statsOn    bool
	maxStats   int

	stats metadata.TypedStatistics // the open row group's; nil when off

	// The open page: its validity bits (optional columns), its values
	// (plain-encoded; booleans as bits), or the integers to delta-pack.
	valid  []byte
	nrows  int // values in the page, nulls included
	nnull  int
	vals   []byte // after gap bytes kept for the levels
	gap    int
	nbits  int // booleans in vals
	ints   []int64
	page   []byte // the page assembled
	packed []byte // its compressed form

	// The open row group: pages (headers and bodies) and their counts.
	chunk        []byte
	nvalues      int64
	uncompressed int64
	pages        int32
}

func (c *flatCol) resetStats() {
	if c.statsOn {
		c.stats = metadata.NewStatistics(c.descr, nil)
	}
}

// used is the open page's size so far: its plain values, and its
// integers counted at their width before packing (delta-packed values at
// 8 bytes, delta-length strings' lengths at 4).
func (c *flatCol) used() int {
	if c.enc == parquet.Encodings.DeltaLengthByteArray {
		return c.valBytes() + 4*len(c.ints)
	}
	return c.valBytes() + 8*len(c.ints)
}

// pageRows is how many more rows fit in the open page: at least 1.
func (c *flatCol) pageRows() int {
	used := c.used()
	var per int
	switch c.kind {
	case kindBool:
		return max(c.pageSize*8-c.nbits, 1)
	case kindBytes32, kindBytes64:
		return -1 // decided from the offsets
	default:
		per = c.kind.width()
		if c.enc == parquet.Encodings.DeltaBinaryPacked {
			per = 8
		}
	}
	return max((c.pageSize-used)/per, 1)
}

// append adds rows [off, off+n) of d to the column, flushing pages as
// they fill.
func (c *flatCol) append(d arrow.ArrayData, off, n int) error {
	bufs := d.Buffers()
	var bitmap []byte
	if bufs[0] != nil && d.NullN() != 0 {
		// A slice's count may be unknown (array.UnknownNullCount):
		// the bitmap decides, row range by row range.
		bitmap = bufs[0].Bytes()
	}
	base := d.Offset()
	for n > 0 {
		take := c.pageRows()
		if take < 0 {
			take = c.byteRows(d, base+off, n)
		}
		take = min(take, n)
		nulls := 0
		if bitmap != nil {
			nulls = take - bitutil.CountSetBits(bitmap, base+off, take)
		}
		if nulls > 0 && !c.optional {
			return fmt.Errorf("column %s: %w", c.name, ErrFlatNull)
		}
		if c.optional {
			c.appendValid(bitmap, base+off, take, nulls)
		}
		c.appendValues(d, bitmap, base+off, take, nulls)
		c.nrows += take
		c.nnull += nulls
		off += take
		n -= take
		if c.used() >= c.pageSize || c.nbits >= 8*c.pageSize {
			if err := c.flushPage(); err != nil {
				return err
			}
		}
	}
	return nil
}

// byteRows is how many rows of a binary column from row i fill the open
// page (the smallest count reaching its size), at most n.
func (c *flatCol) byteRows(d arrow.ArrayData, i, n int) int {
	room := c.pageSize - c.used()
	size := func(k int) int { // bytes of rows [i, i+k), lengths included
		if c.kind == kindBytes32 {
			o := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())
			return int(o[i+k]-o[i]) + 4*k
		}
		o := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())
		return int(o[i+k]-o[i]) + 4*k
	}
	if size(n) <= room {
		return n
	}
	lo, hi := 1, n // size(hi) > room
	for lo < hi {
		mid := (lo + hi) / 2
		if size(mid) >= room {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// appendValid adds the validity of rows [i, i+n), nulls of them null, to
// the page's bits. The bits are kept only once the page has a null: until
// then its levels are one run, whatever the rows.
func (c *flatCol) appendValid(bitmap []byte, i, n, nulls int) {
	if c.nnull+nulls == 0 {
		return
	}
	need := int(bitutil.BytesForBits(int64(c.nrows + n)))
	if c.nnull == 0 { // the page's first null: its rows so far were valid
		c.valid = slices.Grow(c.valid[:0], need)[:bitutil.BytesForBits(int64(c.nrows))]
		bitutil.SetBitsTo(c.valid, 0, int64(c.nrows), true)
	}
	c.valid = slices.Grow(c.valid, need-len(c.valid))[:need]
	if bitmap == nil {
		bitutil.SetBitsTo(c.valid, int64(c.nrows), int64(n), true)
		return
	}
	bitutil.CopyBitmap(bitmap, i, n, c.valid, c.nrows)
}

// appendValues adds the non-null values of rows [i, i+n) to the page, and
// to the statistics.
func (c *flatCol) appendValues(d arrow.ArrayData, bitmap []byte, i, n, nulls int) {
	bufs := d.Buffers()
	switch c.kind {
	case kindBool:
		c.appendBools(bufs[1].Bytes(), bitmap, i, n, nulls)
	case kindBytes32:
		appendBytes(c, arrow.Int32Traits.CastFromBytes(bufs[1].Bytes()), dataBytes(bufs), bitmap, i, n, nulls)
	case kindBytes64:
		appendBytes(c, arrow.Int64Traits.CastFromBytes(bufs[1].Bytes()), dataBytes(bufs), bitmap, i, n, nulls)
	case kindInt32:
		vs := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())[i : i+n]
		if c.stats != nil {
			updateStats(c.stats.(*metadata.Int32Statistics), vs, bitmap, i, nulls)
		}
		c.appendFixed(bufs[1].Bytes(), 4, bitmap, i, n, nulls, func(j int) int64 { return int64(vs[j-i]) })
	case kindInt64:
		vs := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())[i : i+n]
		if c.stats != nil {
			updateStats(c.stats.(*metadata.Int64Statistics), vs, bitmap, i, nulls)
		}
		c.appendFixed(bufs[1].Bytes(), 8, bitmap, i, n, nulls, func(j int) int64 { return vs[j-i] })
	case kindFloat32:
		if c.stats != nil {
			updateStats(c.stats.(*metadata.Float32Statistics), arrow.Float32Traits.CastFromBytes(bufs[1].Bytes())[i:i+n], bitmap, i, nulls)
		}
		c.appendFixed(bufs[1].Bytes(), 4, bitmap, i, n, nulls, nil)
	case kindFloat64:
		if c.stats != nil {
			updateStats(c.stats.(*metadata.Float64Statistics), arrow.Float64Traits.CastFromBytes(bufs[1].Bytes())[i:i+n], bitmap, i, nulls)
		}
		c.appendFixed(bufs[1].Bytes(), 8, bitmap, i, n, nulls, nil)
	}
}

// dataBytes is a binary array's value bytes (no buffer when all are empty).
func dataBytes(bufs []*memory.Buffer) []byte {
	if len(bufs) < 3 || bufs[2] == nil {
		return nil
	}
	return bufs[2].Bytes()
}

// typedStats is arrow-go's statistics of one fixed-width type.
type typedStats[T any] interface {
	Update(values []T, numNull int64)
	UpdateSpaced(values []T, validBits []byte, validBitsOffset, numNull int64)
}

func updateStats[T any](s typedStats[T], vs []T, bitmap []byte, i, nulls int) {
	if nulls == 0 {
		s.Update(vs, 0)
		return
	}
	s.UpdateSpaced(vs, bitmap, int64(i), int64(nulls))
}

// appendFixed adds the non-null values of rows [i, i+n) of a fixed-width
// buffer: their bytes, or, delta-packed, the integers get(j) gives.
func (c *flatCol) appendFixed(buf []byte, width int, bitmap []byte, i, n, nulls int, get func(int) int64) {
	if c.enc == parquet.Encodings.DeltaBinaryPacked {
		for j := i; j < i+n; j++ {
			if nulls == 0 || bitutil.BitIsSet(bitmap, j) {
				c.ints = append(c.ints, get(j))
			}
		}
		return
	}
	if nulls == 0 {
		c.vals = append(c.vals, buf[i*width:(i+n)*width]...)
		return
	}
	// Runs of valid rows, copied whole.
	for j := i; j < i+n; {
		if !bitutil.BitIsSet(bitmap, j) {
			j++
			continue
		}
		k := j + 1
		for k < i+n && bitutil.BitIsSet(bitmap, k) {
			k++
		}
		c.vals = append(c.vals, buf[j*width:k*width]...)
		j = k
	}
}

// appendBytes adds the non-null values of rows [i, i+n) of a binary
// column, and their minimum and maximum to the statistics: plain, a
// 4-byte length before each value; or delta-length, the lengths kept for
// the page's DELTA_BINARY_PACKED block and the bytes appended as they
// lie, each run of valid rows in one copy.
func appendBytes[O int32 | int64](c *flatCol, offs []O, data []byte, bitmap []byte, i, n, nulls int) {
	if c.enc == parquet.Encodings.DeltaLengthByteArray {
		appendByteRuns(c, offs, data, bitmap, i, n, nulls)
		byteStats(c, offs, data, bitmap, i, n, nulls)
		return
	}
	at := len(c.vals)
	c.vals = slices.Grow(c.vals, int(offs[i+n]-offs[i])+4*n)
	out := c.vals[at:cap(c.vals)]
	pos := 0
	for j := i; j < i+n; j++ {
		if nulls > 0 && !bitutil.BitIsSet(bitmap, j) {
			continue
		}
		a, b := offs[j], offs[j+1]
		binary.LittleEndian.PutUint32(out[pos:], uint32(b-a))
		pos += 4 + copy(out[pos+4:], data[a:b])
	}
	c.vals = c.vals[:at+pos]
	byteStats(c, offs, data, bitmap, i, n, nulls)
}

// appendByteRuns adds the lengths of the non-null values of rows [i, i+n)
// to the page's integers and their bytes to its values.
func appendByteRuns[O int32 | int64](c *flatCol, offs []O, data []byte, bitmap []byte, i, n, nulls int) {
	c.ints = slices.Grow(c.ints, n-nulls)
	for j := i; j < i+n; {
		if nulls > 0 && !bitutil.BitIsSet(bitmap, j) {
			j++
			continue
		}
		k := j + 1
		for k < i+n && (nulls == 0 || bitutil.BitIsSet(bitmap, k)) {
			k++
		}
		for r := j; r < k; r++ {
			c.ints = append(c.ints, int64(offs[r+1]-offs[r]))
		}
		c.vals = append(c.vals, data[offs[j]:offs[k]]...)
		j = k
	}
}

// byteStats adds rows [i, i+n) of a binary column to its statistics.
func byteStats[O int32 | int64](c *flatCol, offs []O, data []byte, bitmap []byte, i, n, nulls int) {
	if c.stats == nil {
		return
	}
	s := c.stats.(*metadata.ByteArrayStatistics)
	s.IncNulls(int64(nulls))
	s.IncNumValues(int64(n - nulls))
	if lo, hi, ok := byteRange(offs, data, bitmap, i, n, nulls); ok {
		s.SetMinMax(lo, hi)
	}
}

// byteRange is the least and the greatest of the non-null values of rows
// [i, i+n) (unsigned bytewise order, Parquet's for BYTE_ARRAY), false
// when all are null. Each value is compared by its first 8 bytes as a
// number first, by all of them only when those are equal.
func byteRange[O int32 | int64](offs []O, data []byte, bitmap []byte, i, n, nulls int) (lo, hi []byte, ok bool) {
	var lk, hk uint64
	for j := i; j < i+n; j++ {
		if nulls > 0 && !bitutil.BitIsSet(bitmap, j) {
			continue
		}
		v := data[offs[j]:offs[j+1]]
		k := prefixKey(v)
		switch {
		case !ok:
			lo, hi, lk, hk, ok = v, v, k, k, true
		case k < lk || k == lk && bytes.Compare(v, lo) < 0:
			lo, lk = v, k
		case k > hk || k == hk && bytes.Compare(v, hi) > 0:
			hi, hk = v, k
		}
	}
	return lo, hi, ok
}

// prefixKey is v's first 8 bytes, big-endian, zeros after a shorter v:
// keys order as the values do, ties aside.
func prefixKey(v []byte) uint64 {
	if len(v) >= 8 {
		return binary.BigEndian.Uint64(v)
	}
	var k uint64
	for i, b := range v {
		k |= uint64(b) << (56 - 8*i)
	}
	return k
}

// appendBools adds the non-null booleans of rows [i, i+n), bit-packed as
// PLAIN has them, and whether it saw false and true to the statistics.
func (c *flatCol) appendBools(vals, bitmap []byte, i, n, nulls int) {
	var sawFalse, sawTrue bool
	for j := i; j < i+n; j++ {
		if nulls > 0 && !bitutil.BitIsSet(bitmap, j) {
			continue
		}
		if c.nbits%8 == 0 {
			c.vals = append(c.vals, 0)
		}
		if bitutil.BitIsSet(vals, j) {
			bitutil.SetBit(c.vals[c.gap:], c.nbits)
			sawTrue = true
		} else {
			sawFalse = true
		}
		c.nbits++
	}
	if c.stats != nil {
		s := c.stats.(*metadata.BooleanStatistics)
		s.IncNulls(int64(nulls))
		s.IncNumValues(int64(n - nulls))
		if sawFalse || sawTrue {
			s.SetMinMax(!sawFalse, sawTrue)
		}
	}
}

// flushPage compresses the open page into the row group's pages.
func (c *flatCol) flushPage() error {
	if c.nrows == 0 {
		return nil
	}
	if c.v2 {
		c.flushPageV2()
	} else {
		c.flushPageV1()
	}
	c.nvalues += int64(c.nrows)
	c.pages++
	c.valid, c.vals, c.ints = c.valid[:0], slices.Grow(c.vals[:0], c.gap)[:c.gap], c.ints[:0]
	c.nrows, c.nnull, c.nbits = 0, 0, 0
	return nil
}

// flushPageV1 appends the open page as a V1 data page: its levels (with
// their length) and values compressed together.
func (c *flatCol) flushPageV1() {
	var p []byte
	switch {
	case c.enc == parquet.Encodings.DeltaBinaryPacked:
		p = c.page[:0]
		if c.optional {
			p = appendLevels(p, c.valid, c.nrows, c.nnull)
		}
		p = c.appendDelta(p)
		c.page = p
	case c.enc == parquet.Encodings.DeltaLengthByteArray:
		p = c.lengthPage(c.optional)
	case c.optional && (c.nnull == 0 || c.nnull == c.nrows):
		// The levels are one run: they go in the gap before the
		// values, and the page is compressed where the values are.
		var run [levelGap]byte
		lv := appendLevels(run[:0], nil, c.nrows, c.nnull)
		p = c.vals[c.gap-len(lv):]
		copy(p, lv)
	case c.optional:
		p = appendLevels(c.page[:0], c.valid, c.nrows, c.nnull)
		p = append(p, c.vals[c.gap:]...)
		c.page = p
	default:
		p = c.vals
	}
	c.compress(p)
	before := len(c.chunk)
	c.chunk = appendPageHeader(c.chunk, int32(len(p)), int32(len(c.packed)), int32(c.nrows), c.enc)
	hdr := len(c.chunk) - before
	c.chunk = append(c.chunk, c.packed...)
	c.uncompressed += int64(hdr + len(p))
}

// flushPageV2 appends the open page as a V2 data page: its levels (no
// length) as they are, then its values, compressed apart (unless the
// column is written uncompressed).
func (c *flatCol) flushPageV2() {
	var lv []byte
	if c.optional {
		lv = appendLevelRuns(nil, c.valid, c.nrows, c.nnull)
	}
	vals := c.vals
	switch c.enc {
	case parquet.Encodings.DeltaBinaryPacked:
		c.page = c.appendDelta(c.page[:0])
		vals = c.page
	case parquet.Encodings.DeltaLengthByteArray:
		vals = c.lengthPage(false)
	}
	packed := vals
	if c.compressed {
		c.compress(vals)
		packed = c.packed
	}
	before := len(c.chunk)
	c.chunk = appendPageHeaderV2(c.chunk, int32(len(lv)+len(vals)), int32(len(lv)+len(packed)), int32(c.nrows), int32(c.nnull),
		int32(len(lv)), c.enc, c.compressed)
	hdr := len(c.chunk) - before
	c.chunk = append(append(c.chunk, lv...), packed...)
	c.uncompressed += int64(hdr + len(lv) + len(vals))
}

// lengthPage is the open delta-length page: its levels when withLevels,
// its lengths' DELTA_BINARY_PACKED block, then its bytes. The levels and
// lengths go in the gap before the bytes when they fit, so that the bytes
// are not copied; the gap of the next page is sized from them.
func (c *flatCol) lengthPage(withLevels bool) []byte {
	head := c.page[:0]
	if withLevels {
		head = appendLevels(head, c.valid, c.nrows, c.nnull)
	}
	head = appendDeltaPacked[int32](head, c.ints)
	c.page = head
	var p []byte
	if len(head) <= c.gap {
		p = c.vals[c.gap-len(head):]
		copy(p, head)
	} else {
		p = append(head, c.vals[c.gap:]...)
		c.page = p
	}
	c.gap = max(lengthGap, len(head)+len(head)/4)
	return p
}

// appendDelta appends the open page's integers DELTA_BINARY_PACKED.
func (c *flatCol) appendDelta(p []byte) []byte {
	if c.kind == kindInt32 {
		return appendDeltaPacked[int32](p, c.ints)
	}
	return appendDeltaPacked[int64](p, c.ints)
}

// compress sets packed to p compressed with the column's codec. A zstd
// page of a column found incompressible is stored in raw blocks instead,
// but for one page in rawProbe, compressed to judge the column again.
func (c *flatCol) compress(p []byte) {
	judged := c.zstd && len(p) >= rawMinPage
	if judged && c.raw && c.sinceProbe < rawProbe-1 {
		c.sinceProbe++
		c.packed = appendRawZstd(c.packed[:0], p)
		return
	}
	bound := int(c.codec.CompressBound(int64(len(p))))
	if cap(c.packed) < bound {
		c.packed = make([]byte, bound)
	}
	c.packed = c.codec.EncodeLevel(c.packed[:cap(c.packed)], p, c.level)
	if judged {
		c.raw, c.sinceProbe = !saves(p, c.packed), 0
	}
}
