package pqwrite

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
)

// The encodings FlatWriter writes by hand: the definition levels of an
// optional column (the RLE/bit-packed hybrid of width 1, with the 4-byte
// length of a V1 page), DELTA_BINARY_PACKED integers, and the data page
// header (thrift's compact protocol). Each follows the Parquet format
// specification (Encodings.md, parquet.thrift); the tests read them with
// arrow-go's decoders, and the backends' reader tests with DuckDB,
// pyarrow, delta-rs and the Java readers.

// appendLevels appends the definition levels of n rows whose validity is
// bits (LSB first, from bit 0), nulls of them null: one RLE run when all
// rows are valid or all null, bit-packed runs of the bitmap's own bytes
// otherwise (at most 63 groups of 8 a run, as parquet-mr writes them).
func appendLevels(p, bits []byte, n, nulls int) []byte {
	at := len(p)
	p = appendLevelRuns(append(p, 0, 0, 0, 0), bits, n, nulls) // the length, set below
	binary.LittleEndian.PutUint32(p[at:], uint32(len(p)-at-4))
	return p
}

// appendLevelRuns appends the levels' runs alone, as a V2 page has them.
func appendLevelRuns(p, bits []byte, n, nulls int) []byte {
	switch nulls {
	case 0, n:
		v := byte(1)
		if nulls == n {
			v = 0
		}
		p = binary.AppendUvarint(p, uint64(n)<<1)
		p = append(p, v)
	default:
		groups := (n + 7) / 8
		for g := 0; g < groups; g += 63 {
			k := min(63, groups-g)
			p = append(p, byte(k<<1|1))
			p = append(p, bits[g:g+k]...)
			if g+k == groups && n%8 != 0 {
				// Bits past n in the last byte are not levels: clear
				// them rather than leave what the bitmap had.
				p[len(p)-1] &= byte(1)<<(n%8) - 1
			}
		}
	}
	return p
}

// deltaBlock and deltaMiniblocks are the block layout of
// DELTA_BINARY_PACKED: 128 values a block in 4 miniblocks of 32, what
// parquet-mr, arrow and arrow-go write.
const (
	deltaBlock      = 128
	deltaMiniblocks = 4
	deltaMini       = deltaBlock / deltaMiniblocks
)

// appendDeltaHeader appends the header of n values starting with first.
func appendDeltaHeader(p []byte, n int, first int64) []byte {
	p = binary.AppendUvarint(p, deltaBlock)
	p = binary.AppendUvarint(p, deltaMiniblocks)
	p = binary.AppendUvarint(p, uint64(n))
	return binary.AppendVarint(p, first)
}

// appendDeltaPacked appends vs (values of T, held as int64)
// DELTA_BINARY_PACKED, the differences wrapping at T's width.
func appendDeltaPacked[T int32 | int64](p []byte, vs []int64) []byte {
	if len(vs) == 0 {
		return appendDeltaHeader(p, 0, 0)
	}
	p = appendDeltaHeader(p, len(vs), vs[0])
	mask := ^uint64(0) >> (64 - 8*unsafe.Sizeof(T(0))) // T's width of a difference
	var raw [deltaBlock]T
	var d [deltaBlock]uint64
	for i := 1; i < len(vs); i += deltaBlock {
		n := min(deltaBlock, len(vs)-i)
		prev, minD := T(vs[i-1]), T(vs[i])-T(vs[i-1])
		for j, v := range vs[i : i+n] {
			x := T(v) - prev
			raw[j], prev = x, T(v)
			minD = min(minD, x)
		}
		for j, x := range raw[:n] {
			d[j] = uint64(x-minD) & mask
		}
		p = appendDeltaBlock(p, int64(minD), d[:n])
	}
	return p
}

// appendDeltaBlock appends one block: the smallest difference, each
// miniblock's bit width, and the miniblocks holding values (the last one
// padded with zeros to 32 values; widths of empty ones are 0 and their
// bodies absent).
func appendDeltaBlock(p []byte, minD int64, d []uint64) []byte {
	p = binary.AppendVarint(p, minD)
	at := len(p)
	p = append(p, make([]byte, deltaMiniblocks)...)
	for m := 0; m*deltaMini < len(d); m++ {
		mini := d[m*deltaMini : min(len(d), (m+1)*deltaMini)]
		var or uint64
		for _, v := range mini {
			or |= v
		}
		w := bits.Len64(or)
		p[at+m] = byte(w)
		if w == 0 {
			continue // no body
		}
		if len(mini) < deltaMini {
			var full [deltaMini]uint64
			copy(full[:], mini)
			mini = full[:]
		}
		p = packBits(p, mini, w)
	}
	return p
}

// packBits appends vs packed w bits each, LSB first (Parquet's bit
// packing); len(vs)*w is a multiple of 8.
func packBits(p []byte, vs []uint64, w int) []byte {
	if w == 0 {
		return p
	}
	var acc uint64
	n := 0 // bits in acc
	for _, v := range vs {
		acc |= v << n
		if n+w >= 64 {
			p = binary.LittleEndian.AppendUint64(p, acc)
			used := 64 - n
			if used < 64 {
				acc = v >> used
			} else {
				acc = 0
			}
			n = n + w - 64
		} else {
			n += w
		}
	}
	for ; n > 0; n -= 8 {
		p = append(p, byte(acc))
		acc >>= 8
	}
	return p
}

// Thrift compact protocol: the field types a data page header uses.
const (
	thriftTrue   = 1
	thriftFalse  = 2
	thriftI32    = 5
	thriftStruct = 12
)

// appendPageHeader appends the PageHeader of a V1 data page (parquet.thrift:
// type DATA_PAGE, the sizes, and its DataPageHeader with the values'
// encoding and RLE levels), without statistics or checksum.
func appendPageHeader(p []byte, uncompressed, compressed, values int32, enc parquet.Encoding) []byte {
	field := func(p []byte, delta, typ byte) []byte { return append(p, delta<<4|typ) }
	i32 := func(p []byte, v int32) []byte { return binary.AppendVarint(p, int64(v)) }
	const dataPage, rle = 0, 3
	p = i32(field(p, 1, thriftI32), dataPage)     // 1: type
	p = i32(field(p, 1, thriftI32), uncompressed) // 2: uncompressed_page_size
	p = i32(field(p, 1, thriftI32), compressed)   // 3: compressed_page_size
	p = field(p, 2, thriftStruct)                 // 5: data_page_header
	p = i32(field(p, 1, thriftI32), values)       //   1: num_values
	p = i32(field(p, 1, thriftI32), int32(enc))   //   2: encoding
	p = i32(field(p, 1, thriftI32), rle)          //   3: definition_level_encoding
	p = i32(field(p, 1, thriftI32), rle)          //   4: repetition_level_encoding
	p = append(p, 0)                              //   stop
	return append(p, 0)                           // stop
}

// appendPageHeaderV2 appends the PageHeader of a V2 data page (type
// DATA_PAGE_V2, the sizes, and its DataPageHeaderV2: values, nulls, rows
// (a flat column's values), the encoding, the definition levels' length,
// no repetition levels, whether the values are compressed), without
// statistics or checksum.
func appendPageHeaderV2(p []byte, uncompressed, compressed, values, nulls, defLen int32, enc parquet.Encoding, isCompressed bool) []byte {
	field := func(p []byte, delta, typ byte) []byte { return append(p, delta<<4|typ) }
	i32 := func(p []byte, v int32) []byte { return binary.AppendVarint(p, int64(v)) }
	const dataPageV2 = 3
	p = i32(field(p, 1, thriftI32), dataPageV2)   // 1: type
	p = i32(field(p, 1, thriftI32), uncompressed) // 2: uncompressed_page_size
	p = i32(field(p, 1, thriftI32), compressed)   // 3: compressed_page_size
	p = field(p, 5, thriftStruct)                 // 8: data_page_header_v2
	p = i32(field(p, 1, thriftI32), values)       //   1: num_values
	p = i32(field(p, 1, thriftI32), nulls)        //   2: num_nulls
	p = i32(field(p, 1, thriftI32), values)       //   3: num_rows
	p = i32(field(p, 1, thriftI32), int32(enc))   //   4: encoding
	p = i32(field(p, 1, thriftI32), defLen)       //   5: definition_levels_byte_length
	p = i32(field(p, 1, thriftI32), 0)            //   6: repetition_levels_byte_length
	b := byte(thriftFalse)
	if isCompressed {
		b = thriftTrue
	}
	p = field(p, 1, b)  //   7: is_compressed
	p = append(p, 0)    //   stop
	return append(p, 0) // stop
}
