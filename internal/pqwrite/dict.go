package pqwrite

import (
	"hash/maphash"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
)

// Dictionary encoding is tried on every column, and a column whose first
// page does not shrink under it falls back to plain (the cost-based
// fallback the writers ask for). The try is not free: every value of that page
// goes through a hash table, in every row group. A file decides
// before its first row group instead, for each top-level column of
// primitive type, from the first values of its first batch: a column
// whose sample is nearly all distinct values (ids, timestamps, measures)
// would fall back, so it is written plain from the start; the others keep
// the dictionary with its fallback. Nested columns always keep it.

// dictSample is how many leading values of a batch the decision reads.
const dictSample = 4096

// dictDistinct is the share of distinct values in the sample above which
// a column is written plain.
const dictDistinct = 0.9

// PlainColumns returns a property turning the dictionary off for each
// top-level column of b that samples as high-cardinality.
func PlainColumns(b arrow.RecordBatch) []parquet.WriterProperty {
	var out []parquet.WriterProperty
	for i, f := range b.Schema().Fields() {
		if highCardinality(b.Column(i)) {
			out = append(out, parquet.WithDictionaryFor(f.Name, false))
		}
	}
	return out
}

// highCardinality reports whether the first dictSample non-null values of
// a are nearly all distinct. Types it does not sample report false.
func highCardinality(a arrow.Array) bool {
	var seed = maphash.MakeSeed()
	n := min(a.Len(), dictSample)
	if n < 64 {
		return false // too few to tell; the fallback decides
	}
	seen := make(map[uint64]struct{}, n)
	valid := 0
	add := func(i int, h uint64) {
		if a.IsValid(i) {
			valid++
			seen[h] = struct{}{}
		}
	}
	switch c := a.(type) {
	case *array.Int32:
		for i, v := range c.Int32Values()[:n] {
			add(i, uint64(v))
		}
	case *array.Int64:
		for i, v := range c.Int64Values()[:n] {
			add(i, uint64(v))
		}
	case *array.Float32:
		for i, v := range c.Float32Values()[:n] {
			add(i, uint64(math.Float32bits(v)))
		}
	case *array.Float64:
		for i, v := range c.Float64Values()[:n] {
			add(i, math.Float64bits(v))
		}
	case *array.Date32:
		for i, v := range c.Date32Values()[:n] {
			add(i, uint64(v))
		}
	case *array.Timestamp:
		for i, v := range c.TimestampValues()[:n] {
			add(i, uint64(v))
		}
	case *array.Time64:
		for i, v := range c.Time64Values()[:n] {
			add(i, uint64(v))
		}
	case *array.String:
		for i := range n {
			add(i, maphash.String(seed, c.Value(i)))
		}
	case *array.Binary:
		for i := range n {
			add(i, maphash.Bytes(seed, c.Value(i)))
		}
	default:
		return false
	}
	return valid >= 64 && float64(len(seen)) > dictDistinct*float64(valid)
}
