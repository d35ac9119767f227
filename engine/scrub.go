//go:build duckdb_arrow

package engine

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// The direct path's batches are decoded into pooled buffers that were
// another batch's, maybe of another query. Zeroing every buffer before
// pqarrow fills it cost 12% of a direct stream's CPU, though the decoders
// write every value byte themselves: only the bytes they leave unwritten
// must be cleared before the batch goes to a client. Those are, per
// column: the bits of a bitmap past its last row, the bytes of a buffer
// past what its rows use (the IPC writer sends a buffer up to its length),
// and the value slots of null rows (pqarrow's spaced decoding moves the
// values to the valid slots and leaves the others as they were).
//
// Bitmaps are different: arrow-go's builders set the bits of valid rows
// in memory they take to be zeroed. So the decoders' allocator zeroes
// every buffer of up to zeroedBelow bytes, which holds any bitmap of a
// batch (batchRows rows: 8 KiB; the readers reserve at most a few times
// the rows they read), and hands out larger ones, value buffers,
// as they are; scrub clears the rest of each batch.

// zeroedBelow is the largest buffer decodeMem zeroes.
const zeroedBelow = 64 << 10

// decodeMem is the pool as the direct path's decoders' allocator: see
// above.
type decodeMem struct{ *bufferPool }

func (m decodeMem) Allocate(size int) []byte {
	b := m.allocate(size)
	if size <= zeroedBelow {
		clear(b)
	}
	return b
}

func (m decodeMem) Reallocate(size int, b []byte) []byte {
	out := m.reallocate(size, b)
	if size <= zeroedBelow && size > len(b) {
		clear(out[len(b):])
	}
	return out
}

// scrub zeroes what the decoder left unwritten in the buffers of a
// column of one of the direct path's types (directType): bits past the
// last row, bytes past the rows' values, the value slots of null rows.
// Bytes past a buffer's length are never sent.
func scrub(a arrow.Array) {
	d := a.Data()
	bufs := d.Buffers()
	end := d.Offset() + d.Len()
	if len(bufs) > 0 && bufs[0] != nil {
		clearBitsFrom(bufs[0].Bytes(), end)
	}
	if len(bufs) < 2 || bufs[1] == nil {
		return
	}
	vals := bufs[1].Bytes()
	switch t := d.DataType().(type) {
	case *arrow.BooleanType:
		clearBitsFrom(vals, end)
		clearNullSlots(a, func(i int) { bitutil.ClearBit(vals, i) })
	case *arrow.StringType, *arrow.BinaryType:
		offs := arrow.Int32Traits.CastFromBytes(vals)
		if len(offs) <= end {
			return
		}
		clear(vals[(end+1)*4:])
		if len(bufs) > 2 && bufs[2] != nil {
			data := bufs[2].Bytes()
			if last := int(offs[end]); last >= 0 && last <= len(data) {
				clear(data[last:])
			}
		}
	case arrow.FixedWidthDataType:
		w := t.BitWidth() / 8
		if w == 0 || len(vals) < end*w {
			return
		}
		clear(vals[end*w:])
		clearNullSlots(a, func(i int) { clear(vals[i*w : (i+1)*w]) })
	}
}

// clearNullSlots calls clearSlot with the buffer index of each null row
// of a.
func clearNullSlots(a arrow.Array, clearSlot func(int)) {
	if a.NullN() == 0 {
		return
	}
	off := a.Data().Offset()
	for i := range a.Len() {
		if a.IsNull(i) {
			clearSlot(off + i)
		}
	}
}

// clearBitsFrom zeroes the bits of bitmap b from bit n on.
func clearBitsFrom(b []byte, n int) {
	k := int(bitutil.BytesForBits(int64(n)))
	if k > len(b) {
		return
	}
	if n%8 != 0 {
		b[k-1] &= byte(1)<<(n%8) - 1
	}
	clear(b[k:])
}
