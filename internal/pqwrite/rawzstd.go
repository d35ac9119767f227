package pqwrite

import "encoding/binary"

// Some pages zstd cannot shrink: random measures, timestamps to the
// microsecond, hashes. Compressing them at level 1 still reads every
// byte through zstd's match finder (about 1 ms a MiB here) to save a few
// percent. FlatWriter writes such a page as a zstd frame of raw blocks
// instead (RFC 8878 section 3.1.1.2: Block_Type 0, the bytes as they are),
// which every zstd decoder reads, at the speed of a copy, so the column
// chunk keeps its codec and no reader can tell. A column is found
// incompressible, as ZFS finds a record (it stores a record uncompressed
// unless compression saves an eighth), when one of its pages compressed
// at the column's level saves less than an eighth; its following pages
// are then stored raw, and every rawProbe-th is compressed again to see
// whether that still holds.

// rawProbe is how often a column whose pages are stored raw has one
// compressed again: one page in rawProbe.
const rawProbe = 16

// rawMinPage is the smallest page whose compression is judged: smaller
// ones are always compressed (their frame header is a larger share).
const rawMinPage = 4 << 10

// saves reports whether packed, src compressed, is at least an eighth
// smaller than src.
func saves(src, packed []byte) bool { return len(packed) <= len(src)-len(src)/8 }

// maxRawBlock is the largest zstd block (Block_Maximum_Size: 128 KiB).
const maxRawBlock = 128 << 10

// appendRawZstd appends a zstd frame holding src in raw blocks: the magic
// number, a frame header (single segment, its content size in 4 bytes, no
// checksum, no dictionary), then blocks of at most 128 KiB, the last one
// flagged (an empty src is one empty last block).
func appendRawZstd(dst, src []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, 0xFD2FB528)
	// Frame_Header_Descriptor: Frame_Content_Size_flag 2 (4 bytes),
	// Single_Segment_flag set (no Window_Descriptor: the window is the
	// content), no checksum, no dictionary id.
	dst = append(dst, 2<<6|1<<5)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(src)))
	for {
		n := min(len(src), maxRawBlock)
		last := 0
		if n == len(src) {
			last = 1
		}
		// Block_Header, 3 bytes little-endian: Last_Block, Block_Type 0
		// (raw) in bits 1-2, Block_Size in bits 3-23.
		h := uint32(n)<<3 | uint32(last)
		dst = append(dst, byte(h), byte(h>>8), byte(h>>16))
		dst = append(dst, src[:n]...)
		src = src[n:]
		if last == 1 {
			return dst
		}
	}
}
