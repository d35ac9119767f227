package pqwrite

import (
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
)

// An integer column in order, or nearly (ids, sequence numbers,
// timestamps of events as they come), is mostly its differences: plain,
// each value takes its full width, and zstd spends its time finding the
// few bytes that change from one value to the next. DELTA_BINARY_PACKED
// (a standard Parquet encoding every reader the gateway is checked with
// decodes: parquet-rs, DuckDB, parquet-mr, arrow-go) writes the
// differences bit-packed, a few bits a value, so the page zstd compresses
// is a fraction of the plain one: on the Delta ingest benchmark's int64
// ids a tenth less CPU for the whole file. A column whose differences are
// as wide as its values (random ids, measures) gains nothing and stays
// plain. The choice is made, like the dictionary's (PlainColumns), from
// the first dictSample values of a file's first batch.
//
// A string or binary column of nearly all distinct values (keys, tags,
// ids as text), which keeps no dictionary, is written
// DELTA_LENGTH_BYTE_ARRAY: its lengths delta-packed in one block, then
// its bytes as they lie. Plain puts a 4-byte length before each value,
// which costs a copy a value to write and bytes zstd then compresses; the
// delta-length page is the Arrow data buffer copied whole (on the Delta
// ingest benchmark's 16-byte tags, a tenth of the gateway's CPU). Every
// reader that decodes DELTA_BINARY_PACKED decodes it too (it is that
// encoding's block before the bytes).

// packedShare is the largest width of the sample's differences, as a
// share of the type's, at which a column is delta-packed.
const packedShare = 4 // a quarter: 16 bits of an int64, 8 of an int32

// DeltaPackedColumns returns the properties writing each top-level
// integer, date or timestamp column of b whose sample is in narrow steps
// with DELTA_BINARY_PACKED, and each string or binary column whose sample
// is high-cardinality with DELTA_LENGTH_BYTE_ARRAY (both without a
// dictionary).
func DeltaPackedColumns(b arrow.RecordBatch) []parquet.WriterProperty {
	var out []parquet.WriterProperty
	for i, f := range b.Schema().Fields() {
		p := parquet.ColumnPath{f.Name}
		switch c := b.Column(i); {
		case narrowSteps(c):
			out = append(out, parquet.WithDictionaryPath(p, false), parquet.WithEncodingPath(p, parquet.Encodings.DeltaBinaryPacked))
		case isBytes(c) && highCardinality(c):
			out = append(out, parquet.WithDictionaryPath(p, false), parquet.WithEncodingPath(p, parquet.Encodings.DeltaLengthByteArray))
		}
	}
	return out
}

// isBytes reports whether a is a string or binary array.
func isBytes(a arrow.Array) bool {
	switch a.DataType().ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// narrowSteps reports whether the differences between the first
// dictSample non-null values of a fit in a packedShare of its width.
// Types it does not sample report false.
func narrowSteps(a arrow.Array) bool {
	switch c := a.(type) {
	case *array.Int32:
		return narrow(a, c.Int32Values(), 32)
	case *array.Date32:
		return narrow(a, c.Date32Values(), 32)
	case *array.Int64:
		return narrow(a, c.Int64Values(), 64)
	case *array.Timestamp:
		return narrow(a, c.TimestampValues(), 64)
	}
	return false
}

// narrow is narrowSteps over vs, a's values of width bits.
func narrow[T ~int32 | ~int64](a arrow.Array, vs []T, width int) bool {
	n := min(len(vs), dictSample)
	var lo, hi T
	var prev T
	seen := 0
	for i, v := range vs[:n] {
		if a.IsNull(i) {
			continue
		}
		if seen > 0 {
			d := v - prev // wraps at the type's width, as the encoding's
			if seen == 1 || d < lo {
				lo = d
			}
			if seen == 1 || d > hi {
				hi = d
			}
		}
		prev = v
		seen++
	}
	if seen < 64 {
		return false // too few to tell
	}
	// The encoding packs each difference less the block's smallest.
	spread := uint64(hi - lo)
	if width == 32 {
		spread = uint64(uint32(hi - lo))
	}
	return bits.Len64(spread) <= width/packedShare
}
