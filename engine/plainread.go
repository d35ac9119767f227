//go:build duckdb_arrow

package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The plain reader: the direct path's decoder for the column chunks that
// are the common case of the files the gateway writes (flat, PLAIN
// values, no dictionary, levels RLE-encoded). It takes the decompressed
// pages from arrow-go's page reader and writes a batch's buffers straight
// from them: a fixed-width page's values in one copy, a string page's
// length-prefixed values walked once into the offsets and data of the
// batch, and the definition levels (RLE or bit-packed runs of width 1)
// straight into the validity bitmap. pqarrow's record reader got there
// through int16 level arrays, builders that need zeroed memory and a
// callback per value: on the query benchmark's table its string column
// alone was 15% of a direct read's CPU.
//
// A unit whose column chunks are anything else (a dictionary, another
// encoding, a physical type it does not read as is, encryption, nested
// levels) is read by pqarrow as before (plainReadable). Every byte of the
// buffers it hands on is written (bitmaps cleared first, a null's value
// slot zeroed, a buffer's length the bytes its rows use), so it takes the
// pool's memory unzeroed.

// batches is a source of one unit's batches: its columns (the file's
// leaves read, in order) and their rows; nil at the end. The caller
// releases the columns.
type batches interface {
	next() ([]arrow.Array, int64, error)
	close()
}

// pqBatches is pqarrow's record reader as a source.
type pqBatches struct{ rr pqarrow.RecordReader }

func (b pqBatches) next() ([]arrow.Array, int64, error) {
	if !b.rr.Next() {
		return nil, 0, b.rr.Err()
	}
	rec := b.rr.RecordBatch()
	cols := slices.Clone(rec.Columns())
	for _, c := range cols {
		c.Retain()
	}
	return cols, rec.NumRows(), nil
}

func (b pqBatches) close() { b.rr.Release() }

// plainMaxBytes bounds the string bytes of one column of a unit the plain
// reader takes (the batch's int32 offsets must hold them; pqarrow reads
// larger chunks as it can).
const plainMaxBytes = 1 << 30

// plainReadable tells whether the plain reader reads every column of u:
// flat columns (no repetition, at most one definition level) of a
// physical type whose bytes are the Arrow type's values, chunks without a
// dictionary, encryption or any encoding but PLAIN values and RLE levels.
func plainReadable(f *directFile, u directUnit) bool {
	for i, leaf := range f.leaves {
		col := f.meta.Schema.Column(leaf)
		if col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 || plainWidth(col.PhysicalType(), f.types[i]) == notPlain {
			return false
		}
		var bytes int64
		for _, rg := range u.rowGroups {
			cc, err := f.meta.RowGroup(rg).ColumnChunk(leaf)
			if err != nil || cc.HasDictionaryPage() || cc.CryptoMetadata() != nil {
				return false
			}
			for _, e := range cc.Encodings() {
				if e != parquet.Encodings.Plain && e != parquet.Encodings.RLE {
					return false
				}
			}
			bytes += cc.TotalUncompressedSize()
		}
		if bytes > plainMaxBytes {
			return false
		}
	}
	return true
}

// plainBits and notPlain are widths of plainWidth.
const (
	plainBits = -1 // booleans: one bit a value
	notPlain  = -2
)

// plainWidth is the bytes per value of a PLAIN column of physical type pt
// read as Arrow type t: 0 for byte arrays, plainBits for booleans,
// notPlain when its bytes are not t's values as they are.
func plainWidth(pt parquet.Type, t arrow.DataType) int {
	id := t.ID()
	switch pt {
	case parquet.Types.Boolean:
		if id == arrow.BOOL {
			return plainBits
		}
	case parquet.Types.Int32:
		if id == arrow.INT32 || id == arrow.UINT32 || id == arrow.DATE32 {
			return 4
		}
	case parquet.Types.Int64:
		if id == arrow.INT64 || id == arrow.UINT64 || id == arrow.TIMESTAMP {
			return 8
		}
	case parquet.Types.Float:
		if id == arrow.FLOAT32 {
			return 4
		}
	case parquet.Types.Double:
		if id == arrow.FLOAT64 {
			return 8
		}
	case parquet.Types.ByteArray:
		if id == arrow.STRING || id == arrow.BINARY {
			return 0
		}
	}
	return notPlain
}

// plainBatches reads a unit's batches with the plain reader.
type plainBatches struct {
	cols []*plainColumn
	left int64 // the unit's rows not yet read
}

// newPlainBatches reads the row groups of u from pf (plainReadable).
func newPlainBatches(pf *file.Reader, f *directFile, u directUnit, mem memory.Allocator) *plainBatches {
	b := &plainBatches{}
	var rgs []rowGroup
	for _, rg := range u.rowGroups {
		rgs = append(rgs, rowGroup{pf.RowGroup(rg), rg})
		b.left += f.meta.RowGroup(rg).NumRows()
	}
	for i, leaf := range f.leaves {
		col := f.meta.Schema.Column(leaf)
		c := &plainColumn{
			name: col.Name(), typ: f.types[i], width: plainWidth(col.PhysicalType(), f.types[i]),
			optional: col.MaxDefinitionLevel() == 1, rgs: rgs, leaf: leaf, mem: mem,
		}
		if c.width == 0 && len(u.rowGroups) > 0 {
			// A first guess of the data bytes per row, from the footer
			// (it counts the lengths and levels too: a little over).
			m := f.meta.RowGroup(u.rowGroups[0])
			if cc, err := m.ColumnChunk(leaf); err == nil && m.NumRows() > 0 {
				c.perRow = int(cc.TotalUncompressedSize()/m.NumRows()) + 1
			}
			for _, rg := range u.rowGroups {
				if cc, err := f.meta.RowGroup(rg).ColumnChunk(leaf); err == nil {
					c.most += int(max(cc.TotalUncompressedSize(), 0))
				}
			}
		}
		b.cols = append(b.cols, c)
	}
	return b
}

func (b *plainBatches) next() ([]arrow.Array, int64, error) {
	if b.left <= 0 {
		return nil, 0, nil
	}
	n := min(b.left, batchRows)
	out := make([]arrow.Array, len(b.cols))
	for i, c := range b.cols {
		a, err := c.read(int(n))
		if err != nil {
			for _, o := range out[:i] {
				o.Release()
			}
			return nil, 0, err
		}
		out[i] = a
	}
	b.left -= n
	return out, n, nil
}

func (b *plainBatches) close() {
	for _, c := range b.cols {
		c.closePages()
	}
}

// rowGroup is a row group's reader and its index in the file.
type rowGroup struct {
	r   *file.RowGroupReader
	idx int
}

// plainColumn reads one column across a unit's row groups.
type plainColumn struct {
	name     string
	typ      arrow.DataType
	width    int  // bytes per value; 0 for byte arrays, plainBits for booleans
	optional bool // one definition level: a validity bitmap
	rgs      []rowGroup
	leaf     int
	mem      memory.Allocator
	perRow   int // string data bytes per row, as last seen
	most     int // the unit's string data bytes at most, by the footer

	next   int // the row group to open next
	pr     file.PageReader
	rgLeft int64 // rows of the open row group in pages not yet opened
	left   int   // rows of the open page not yet read
	defs   levels
	vals   []byte // the open page's values not yet read
	vbit   int    // of a boolean page: the bit of vals of its next value
	// rleBools holds a boolean page's values when they are RLE-encoded
	// (bit width 1, as levels are), which writers of data page v2 do.
	rleBools *levels
}

// errorf is an error naming the column and its row group.
func (c *plainColumn) errorf(format string, args ...any) error {
	rg := -1
	if c.next > 0 {
		rg = c.rgs[c.next-1].idx
	}
	return fmt.Errorf("column %s, row group %d: %s", c.name, rg, fmt.Sprintf(format, args...))
}

func (c *plainColumn) closePages() {
	if c.pr != nil {
		_ = c.pr.Close()
		c.pr = nil
	}
}

// nextPage opens the next data page holding rows.
func (c *plainColumn) nextPage() error {
	for {
		if c.pr == nil {
			if c.next == len(c.rgs) {
				return c.errorf("the row groups end before the rows the footer counts")
			}
			rg := c.rgs[c.next]
			c.next++
			pr, err := rg.r.GetColumnPageReader(c.leaf)
			if err != nil {
				return c.errorf("%v", err)
			}
			c.pr, c.rgLeft = pr, rg.r.NumRows()
		}
		if c.rgLeft == 0 {
			c.closePages()
			continue
		}
		if !c.pr.Next() {
			if err := c.pr.Err(); err != nil {
				return c.errorf("%v", err)
			}
			return c.errorf("the pages end %d rows before the row group does", c.rgLeft)
		}
		var rows int32
		switch pg := c.pr.Page().(type) {
		case *file.DataPageV1:
			data := pg.Data()
			if c.optional {
				if pg.DefinitionLevelEncoding() != parquet.Encodings.RLE {
					return c.errorf("definition levels encoded %s, not RLE", pg.DefinitionLevelEncoding())
				}
				if len(data) < 4 {
					return c.errorf("a data page ends in its definition levels")
				}
				n := binary.LittleEndian.Uint32(data)
				if uint64(n) > uint64(len(data)-4) {
					return c.errorf("definition levels of %d bytes in a page of %d", n, len(data))
				}
				c.defs = levels{buf: data[4 : 4+n]}
				data = data[4+n:]
			}
			rows, c.vals = pg.NumValues(), data
		case *file.DataPageV2:
			data := pg.Data()
			rl, dl := int64(pg.RepetitionLevelByteLen()), int64(pg.DefinitionLevelByteLen())
			if rl < 0 || dl < 0 || rl+dl > int64(len(data)) {
				return c.errorf("levels of %d and %d bytes in a page of %d", rl, dl, len(data))
			}
			c.defs = levels{buf: data[rl : rl+dl]}
			rows, c.vals = pg.NumValues(), data[rl+dl:]
		default:
			return c.errorf("a dictionary page in a chunk whose footer lists none")
		}
		c.rleBools = nil
		switch enc := parquet.Encoding(c.pr.Page().Encoding()); {
		case enc == parquet.Encodings.Plain:
		case enc == parquet.Encodings.RLE && c.width == plainBits:
			// A 4-byte length, then the runs.
			if len(c.vals) < 4 || uint64(binary.LittleEndian.Uint32(c.vals)) > uint64(len(c.vals)-4) {
				return c.errorf("a page of RLE booleans ends in its runs")
			}
			c.rleBools = &levels{buf: c.vals[4 : 4+binary.LittleEndian.Uint32(c.vals)]}
		default:
			return c.errorf("values encoded %s, not PLAIN", enc)
		}
		if rows < 0 || int64(rows) > c.rgLeft {
			return c.errorf("a page of %d rows where %d are left", rows, c.rgLeft)
		}
		c.rgLeft -= int64(rows)
		c.left, c.vbit = int(rows), 0
		if rows > 0 {
			return nil
		}
	}
}

// read is the column's next n rows.
func (c *plainColumn) read(n int) (a arrow.Array, err error) {
	var valid, vals, offs, data []byte
	defer func() {
		if err != nil {
			for _, b := range [][]byte{valid, vals, offs, data} {
				if b != nil {
					c.mem.Free(b)
				}
			}
		}
	}()
	if c.optional {
		valid = c.mem.Allocate(int(bitutil.BytesForBits(int64(n))))
		clear(valid)
	}
	var o []int32
	switch {
	case c.width > 0:
		vals = c.mem.Allocate(n * c.width)
	case c.width == plainBits:
		vals = c.mem.Allocate(int(bitutil.BytesForBits(int64(n))))
		clear(vals)
	default:
		offs = c.mem.Allocate((n + 1) * 4)
		o = arrow.Int32Traits.CastFromBytes(offs)
		o[0] = 0
		data = c.mem.Allocate(max(min(c.perRow*n, c.most), minPooled))
	}
	nulls := 0
	for at := 0; at < n; {
		if c.left == 0 {
			if err := c.nextPage(); err != nil {
				return nil, err
			}
		}
		k := min(n-at, c.left)
		nvalid := k
		if c.optional {
			if nvalid, err = c.defs.read(valid, at, k); err != nil {
				return nil, c.errorf("definition levels: %v", err)
			}
		}
		nulls += k - nvalid
		switch {
		case c.width > 0:
			err = c.fixed(vals, valid, at, k, nvalid)
		case c.width == plainBits:
			err = c.bools(vals, valid, at, k, nvalid)
		default:
			data, err = c.strings(o, data, valid, at, k, nvalid)
		}
		if err != nil {
			return nil, err
		}
		at += k
		c.left -= k
	}
	bufs := []*memory.Buffer{nil}
	if nulls > 0 {
		bufs[0] = memory.NewBufferWithAllocator(valid, c.mem)
	} else if valid != nil {
		c.mem.Free(valid)
		valid = nil
	}
	if c.width != 0 {
		bufs = append(bufs, memory.NewBufferWithAllocator(vals, c.mem))
	} else {
		end := int(o[n])
		c.perRow = end/n + 1
		bufs = append(bufs, memory.NewBufferWithAllocator(offs, c.mem), memory.NewBufferWithAllocator(data[:end], c.mem))
	}
	d := array.NewData(c.typ, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.MakeFromData(d), nil
}

// fixed copies k rows of fixed-width values into vals from row at, of
// which nvalid are valid (and in the page).
func (c *plainColumn) fixed(vals, valid []byte, at, k, nvalid int) error {
	w := c.width
	need := nvalid * w
	if need > len(c.vals) {
		return c.errorf("a page holds %d bytes of values where %d rows need %d", len(c.vals), nvalid, need)
	}
	src, dst := c.vals[:need], vals[at*w:(at+k)*w]
	c.vals = c.vals[need:]
	if nvalid == k {
		copy(dst, src)
		return nil
	}
	clear(dst)
	for r := range k {
		if bitutil.BitIsSet(valid, at+r) {
			copy(dst[r*w:(r+1)*w], src[:w])
			src = src[w:]
		}
	}
	return nil
}

// bools copies k rows of booleans (PLAIN: one bit each) into the bitmap
// vals (cleared) from row at, of which nvalid are valid.
func (c *plainColumn) bools(vals, valid []byte, at, k, nvalid int) error {
	if c.rleBools != nil {
		if nvalid == k {
			if _, err := c.rleBools.read(vals, at, k); err != nil {
				return c.errorf("boolean values: %v", err)
			}
			return nil
		}
		// The valid rows' values, then spread over the rows.
		c.vals, c.vbit = make([]byte, bitutil.BytesForBits(int64(nvalid))), 0
		if _, err := c.rleBools.read(c.vals, 0, nvalid); err != nil {
			return c.errorf("boolean values: %v", err)
		}
	}
	if c.vbit+nvalid > len(c.vals)*8 {
		return c.errorf("a page holds %d bits of values where %d more rows need one each", len(c.vals)*8-c.vbit, nvalid)
	}
	if nvalid == k {
		bitutil.CopyBitmap(c.vals, c.vbit, k, vals, at)
	} else {
		j := c.vbit
		for r := at; r < at+k; r++ {
			if bitutil.BitIsSet(valid, r) {
				if bitutil.BitIsSet(c.vals, j) {
					bitutil.SetBit(vals, r)
				}
				j++
			}
		}
	}
	c.vbit += nvalid
	return nil
}

// strings walks k rows of length-prefixed values into the offsets o and
// data from row at, growing data as needed; nvalid of the rows are valid.
func (c *plainColumn) strings(o []int32, data, valid []byte, at, k, nvalid int) ([]byte, error) {
	src := c.vals
	end := int(o[at])
	for r := at; r < at+k; r++ {
		if nvalid < k && !bitutil.BitIsSet(valid, r) {
			o[r+1] = int32(end)
			continue
		}
		if len(src) < 4 {
			return data, c.errorf("a page ends in the length of a value")
		}
		l := uint64(binary.LittleEndian.Uint32(src))
		src = src[4:]
		if l > uint64(len(src)) {
			return data, c.errorf("a value of %d bytes where the page holds %d more", l, len(src))
		}
		if l <= 16 && len(src) >= 16 && len(data)-end >= 16 {
			// A short value as two words: a call of memmove costs more.
			// The bytes past it are the next value's, or past the data.
			*(*[16]byte)(data[end:]) = *(*[16]byte)(src)
		} else {
			if next := end + int(l); next > len(data) {
				if next > math.MaxInt32 {
					return data, c.errorf("a batch of more than 2 GiB of values")
				}
				data = c.mem.Reallocate(min(max(next, 2*len(data)), math.MaxInt32), data[:end])
			}
			copy(data[end:], src[:l])
		}
		src = src[l:]
		end += int(l)
		o[r+1] = int32(end)
	}
	c.vals = src
	return data, nil
}

// levels decodes definition levels of maximum 1 (bit width 1) in
// Parquet's RLE/bit-packed hybrid encoding into a validity bitmap.
type levels struct {
	buf    []byte
	rle    int    // values left in the current run of one value
	set    bool   // that value
	packed int    // values left in the current bit-packed run
	bits   []byte // the bit-packed run
	bit    int    // the bit of bits of its next value
}

// errLevelsEnd is a page whose definition levels end before its rows.
var errLevelsEnd = errors.New("the levels end before the page's rows")

// read sets the bits at..at+k of valid (cleared) for the next k levels;
// it returns how many are set.
func (l *levels) read(valid []byte, at, k int) (int, error) {
	n := 0
	for k > 0 {
		switch {
		case l.rle > 0:
			m := min(k, l.rle)
			if l.set {
				bitutil.SetBitsTo(valid, int64(at), int64(m), true)
				n += m
			}
			l.rle -= m
			at, k = at+m, k-m
		case l.packed > 0:
			m := min(k, l.packed)
			bitutil.CopyBitmap(l.bits, l.bit, m, valid, at)
			n += bitutil.CountSetBits(valid, at, m)
			l.packed -= m
			l.bit += m
			at, k = at+m, k-m
		default:
			if err := l.header(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// header starts the next run.
func (l *levels) header() error {
	h, w := binary.Uvarint(l.buf)
	if w <= 0 {
		return errLevelsEnd
	}
	l.buf = l.buf[w:]
	if h&1 == 1 {
		// Groups of 8 values, one byte each at width 1; a writer may
		// leave the last group's padding out.
		nb := min(h>>1, uint64(len(l.buf)))
		l.bits, l.bit, l.packed = l.buf[:nb], 0, int(nb)*8
		l.buf = l.buf[nb:]
		return nil
	}
	if len(l.buf) == 0 {
		return errLevelsEnd
	}
	v := l.buf[0]
	l.buf = l.buf[1:]
	if v > 1 {
		return fmt.Errorf("a level of %d where the most is 1", v)
	}
	l.rle, l.set = int(min(h>>1, math.MaxInt32)), v == 1
	return nil
}
