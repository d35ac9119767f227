//go:build duckdb_arrow

package engine

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duck "github.com/duckdb/duckdb-go-bindings"
)

// A result whose columns all have a type whose DuckDB vector and Arrow
// array share their layout (integers, floats, dates, times, timestamps,
// booleans, strings and blobs) is gathered straight from DuckDB's vectors
// into the buffers of a 64Ki-row batch: one copy, into pooled buffers.
// The general path converts each 2048-row chunk to Arrow in DuckDB and
// then concatenates the chunks, two copies and many small arrays; on a
// full-table stream that was a third of the gateway's CPU.
//
// The layouts relied on are DuckDB's C API (duckdb.h): a fetched chunk's
// vectors are flat; a fixed-width vector is an array of the type's C
// representation; the validity mask is an array of uint64 words, bit i of
// the mask for row i, set when valid (the same bits as an Arrow bitmap on
// a little-endian machine), and NULL when every row is valid; a VARCHAR or
// BLOB vector is an array of 16-byte duckdb_string_t, its length in the
// first 4 bytes, the bytes inline after it when 12 or fewer, else a
// pointer in the last 8.

type fastKind uint8

const (
	fastFixed  fastKind = iota // width bytes per row, copied as is
	fastBool                   // one byte per row in DuckDB, one bit in Arrow
	fastString                 // duckdb_string_t to int32 offsets and bytes
)

// fastColumn is one column of the batch being gathered.
type fastColumn struct {
	kind  fastKind
	width int // bytes per row, fastFixed
	typ   arrow.DataType

	data    *memory.Buffer // values, or bits for fastBool
	valid   *memory.Buffer // nil until the first null
	offsets *memory.Buffer // fastString
	nulls   int
	bytes   int // fastString: value bytes so far
	hint    int // fastString: the value bytes of the previous batch, to size the next
}

// fastBatcher gathers a result's chunks into batches.
type fastBatcher struct {
	mem    memory.Allocator
	schema *arrow.Schema
	cols   []fastColumn
	rows   int
}

// maxBatchValueBytes ends a batch early once its strings hold this many
// bytes, so a batch of long strings stays bounded.
const maxBatchValueBytes = 64 << 20

// newFastBatcher returns a batcher for a result of the given DuckDB types
// and Arrow schema, or nil when a column has a type it does not handle.
func newFastBatcher(mem memory.Allocator, schema *arrow.Schema, types []duck.Type) *fastBatcher {
	if len(types) != schema.NumFields() || len(types) == 0 {
		return nil
	}
	b := &fastBatcher{mem: mem, schema: schema, cols: make([]fastColumn, len(types))}
	for i, t := range types {
		c, ok := fastColumnOf(t, schema.Field(i).Type)
		if !ok {
			return nil
		}
		b.cols[i] = c
	}
	return b
}

// fastColumnOf is the fast handling of a DuckDB type shown to Arrow as dt;
// ok is false when the pair is not one whose layouts match.
func fastColumnOf(t duck.Type, dt arrow.DataType) (fastColumn, bool) {
	fixed := func(w int, id arrow.Type) (fastColumn, bool) {
		return fastColumn{kind: fastFixed, width: w, typ: dt}, dt.ID() == id
	}
	ts := func(unit arrow.TimeUnit) (fastColumn, bool) {
		tt, ok := dt.(*arrow.TimestampType)
		return fastColumn{kind: fastFixed, width: 8, typ: dt}, ok && tt.Unit == unit
	}
	switch t {
	case duck.TypeBoolean:
		return fastColumn{kind: fastBool, typ: dt}, dt.ID() == arrow.BOOL
	case duck.TypeTinyInt:
		return fixed(1, arrow.INT8)
	case duck.TypeSmallInt:
		return fixed(2, arrow.INT16)
	case duck.TypeInteger:
		return fixed(4, arrow.INT32)
	case duck.TypeBigInt:
		return fixed(8, arrow.INT64)
	case duck.TypeUTinyInt:
		return fixed(1, arrow.UINT8)
	case duck.TypeUSmallInt:
		return fixed(2, arrow.UINT16)
	case duck.TypeUInteger:
		return fixed(4, arrow.UINT32)
	case duck.TypeUBigInt:
		return fixed(8, arrow.UINT64)
	case duck.TypeFloat:
		return fixed(4, arrow.FLOAT32)
	case duck.TypeDouble:
		return fixed(8, arrow.FLOAT64)
	case duck.TypeDate:
		return fixed(4, arrow.DATE32)
	case duck.TypeTime:
		tt, ok := dt.(*arrow.Time64Type)
		return fastColumn{kind: fastFixed, width: 8, typ: dt}, ok && tt.Unit == arrow.Microsecond
	case duck.TypeTimestamp, duck.TypeTimestampTZ:
		return ts(arrow.Microsecond)
	case duck.TypeTimestampS:
		return ts(arrow.Second)
	case duck.TypeTimestampMS:
		return ts(arrow.Millisecond)
	case duck.TypeTimestampNS:
		return ts(arrow.Nanosecond)
	case duck.TypeVarchar:
		return fastColumn{kind: fastString, typ: dt}, dt.ID() == arrow.STRING
	case duck.TypeBlob:
		return fastColumn{kind: fastString, typ: dt}, dt.ID() == arrow.BINARY
	}
	return fastColumn{}, false
}

// room reports whether a chunk of n more rows fits the batch.
func (b *fastBatcher) room(n int) bool {
	if b.rows+n > batchRows {
		return false
	}
	for i := range b.cols {
		if b.cols[i].bytes >= maxBatchValueBytes {
			return false
		}
	}
	return true
}

// buffer returns a buffer of at least n bytes from b's allocator.
func (b *fastBatcher) buffer(n int) *memory.Buffer {
	buf := memory.NewResizableBuffer(b.mem)
	buf.Resize(n)
	return buf
}

// ensure grows buf, keeping its contents, to hold at least n bytes.
func ensure(buf *memory.Buffer, n int) {
	if n > buf.Cap() {
		buf.Reserve(max(n, 2*buf.Cap()))
	}
	if n > buf.Len() {
		buf.ResizeNoShrink(n)
	}
}

// append copies a fetched chunk of n rows into the batch, which must have
// room for it.
func (b *fastBatcher) append(chunk duck.DataChunk, n int) error {
	if n == 0 {
		return nil
	}
	for i := range b.cols {
		c := &b.cols[i]
		vec := duck.DataChunkGetVector(chunk, duck.IdxT(i))
		data := duck.VectorGetData(vec)
		if c.data == nil {
			switch c.kind {
			case fastFixed:
				c.data = b.buffer(batchRows * c.width)
			case fastBool:
				c.data = b.buffer(int(bitutil.BytesForBits(batchRows)))
			case fastString:
				c.offsets = b.buffer((batchRows + 1) * 4)
				// The previous batch's bytes and an eighth: a
				// buffer grown from 64 KiB by doubling copied
				// itself some five times per batch (3% of a
				// stream's CPU, docs/performance.md).
				c.data = b.buffer(max(64<<10, c.hint+c.hint/8))
			}
		}
		var mask []uint64
		if p := duck.VectorGetValidity(vec); p != nil {
			mask = unsafe.Slice((*uint64)(p), (n+63)/64)
		}
		b.appendValidity(c, mask, n)
		switch c.kind {
		case fastFixed:
			src := unsafe.Slice((*byte)(data), n*c.width)
			copy(c.data.Buf()[b.rows*c.width:], src)
		case fastBool:
			src := unsafe.Slice((*byte)(data), n)
			bits := c.data.Buf()
			for r, v := range src {
				bitutil.SetBitTo(bits, b.rows+r, v != 0)
			}
		case fastString:
			if err := b.appendStrings(c, data, mask, n); err != nil {
				return err
			}
		}
	}
	b.rows += n
	return nil
}

// appendValidity adds a chunk's validity mask (nil: all valid) after the
// batch's rows.
func (b *fastBatcher) appendValidity(c *fastColumn, mask []uint64, n int) {
	if mask == nil {
		if c.valid != nil {
			bitutil.SetBitsTo(c.valid.Buf(), int64(b.rows), int64(n), true)
		}
		return
	}
	bits := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(mask))), len(mask)*8)
	nulls := n - bitutil.CountSetBits(bits, 0, n)
	if nulls == 0 {
		if c.valid != nil {
			bitutil.SetBitsTo(c.valid.Buf(), int64(b.rows), int64(n), true)
		}
		return
	}
	if c.valid == nil {
		c.valid = b.buffer(int(bitutil.BytesForBits(batchRows)))
		bitutil.SetBitsTo(c.valid.Buf(), 0, int64(b.rows), true)
	}
	bitutil.CopyBitmap(bits, 0, n, c.valid.Buf(), b.rows)
	c.nulls += nulls
}

// duckString is duckdb_string_t.
type duckString struct {
	length uint32
	prefix [4]byte
	ptr    unsafe.Pointer // the bytes, when length > 12; else 8 more inline bytes
}

const duckStringInline = 12

func (b *fastBatcher) appendStrings(c *fastColumn, data unsafe.Pointer, mask []uint64, n int) error {
	strs := unsafe.Slice((*duckString)(data), n)
	offs := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(c.offsets.Buf()))), batchRows+1)
	offs = offs[b.rows : b.rows+n+1]
	// One pass over the strings. The data buffer always has room for
	// every string still to come inline (at most 12 bytes each) and for a
	// whole 12-byte move at the end, so a short string is copied as one
	// fixed-size move, not a call to memmove, without a bounds check of
	// its own; a longer one makes room for itself.
	ensure(c.data, c.bytes+(n+1)*duckStringInline)
	out := c.data.Buf()
	pos := c.bytes
	for r := range strs {
		offs[r] = int32(pos)
		if mask != nil && mask[r>>6]&(1<<(r&63)) == 0 {
			continue
		}
		s := &strs[r]
		l := int(s.length)
		if l <= duckStringInline {
			*(*[duckStringInline]byte)(out[pos : pos+duckStringInline]) = *(*[duckStringInline]byte)(unsafe.Pointer(&s.prefix))
		} else {
			if pos+l > math.MaxInt32 {
				return b.stringsTooLong(c)
			}
			if need := pos + l + (n-r)*duckStringInline; need > len(out) {
				ensure(c.data, need)
				out = c.data.Buf()
			}
			copy(out[pos:pos+l], unsafe.Slice((*byte)(s.ptr), l))
		}
		pos += l
	}
	if pos > math.MaxInt32 {
		return b.stringsTooLong(c)
	}
	offs[n] = int32(pos)
	c.bytes = pos
	return nil
}

func (b *fastBatcher) stringsTooLong(c *fastColumn) error {
	return fmt.Errorf("engine: result batch: column %s holds more than 2 GiB of strings in one batch", b.schema.Field(b.colIndex(c)).Name)
}

func (b *fastBatcher) colIndex(c *fastColumn) int {
	for i := range b.cols {
		if &b.cols[i] == c {
			return i
		}
	}
	return 0
}

// finish returns the gathered batch and starts the next one; nil when no
// row was gathered.
func (b *fastBatcher) finish() arrow.RecordBatch {
	if b.rows == 0 {
		return nil
	}
	n := b.rows
	cols := make([]arrow.Array, len(b.cols))
	for i := range b.cols {
		c := &b.cols[i]
		var bufs []*memory.Buffer
		switch c.kind {
		case fastFixed:
			c.data.ResizeNoShrink(n * c.width)
			bufs = []*memory.Buffer{c.valid, c.data}
		case fastBool:
			c.data.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
			bufs = []*memory.Buffer{c.valid, c.data}
		case fastString:
			c.offsets.ResizeNoShrink((n + 1) * 4)
			c.data.ResizeNoShrink(c.bytes)
			bufs = []*memory.Buffer{c.valid, c.offsets, c.data}
		}
		if c.valid != nil {
			c.valid.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
		}
		d := array.NewData(c.typ, n, bufs, nil, c.nulls, 0)
		cols[i] = array.MakeFromData(d)
		d.Release()
		for _, buf := range bufs {
			if buf != nil {
				buf.Release()
			}
		}
		*c = fastColumn{kind: c.kind, width: c.width, typ: c.typ, hint: c.bytes}
	}
	rec := array.NewRecordBatch(b.schema, cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	b.rows = 0
	return rec
}

// release frees a batch gathered in part.
func (b *fastBatcher) release() {
	for i := range b.cols {
		c := &b.cols[i]
		for _, buf := range []*memory.Buffer{c.data, c.valid, c.offsets} {
			if buf != nil {
				buf.Release()
			}
		}
		*c = fastColumn{kind: c.kind, width: c.width, typ: c.typ}
	}
	b.rows = 0
}
