package paimon

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// foldEach is colStats.add value by value: the generic path, which the
// typed paths must agree with.
func foldEach(s *colStats, a arrow.Array) {
	s.nulls += int64(a.NullN())
	for i := range a.Len() {
		v := value(a, i)
		if f, ok := v.(float64); v == nil || ok && math.IsNaN(f) {
			continue
		}
		if f, ok := v.(float32); ok && math.IsNaN(float64(f)) {
			continue
		}
		s.fold(v, v)
	}
}

// TestColStatsTypedPaths checks the min, max and null count of float,
// date and timestamp columns (nulls, NaNs, signed zeros, sliced arrays,
// several batches, all-null batches) against the value-by-value fold.
func TestColStatsTypedPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mem := memory.DefaultAllocator
	types := []arrow.DataType{arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float32, arrow.FixedWidthTypes.Date32,
		&arrow.TimestampType{Unit: arrow.Microsecond}, &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Second}}
	for _, dt := range types {
		for trial := range 40 {
			var got, want colStats
			for batch := range 3 {
				b := array.NewBuilder(mem, dt)
				n := 1 + rng.IntN(50)
				allNull := trial%7 == 0 && batch == 1
				for range n {
					if allNull || rng.IntN(4) == 0 {
						b.AppendNull()
						continue
					}
					x := rng.Int64N(2000) - 1000
					switch bb := b.(type) {
					case *array.Float64Builder:
						f := float64(x) / 7
						switch rng.IntN(6) {
						case 0:
							f = math.NaN()
						case 1:
							f = math.Copysign(0, -1)
						}
						bb.Append(f)
					case *array.Float32Builder:
						f := float32(x) / 7
						if rng.IntN(5) == 0 {
							f = float32(math.NaN())
						}
						bb.Append(f)
					case *array.Date32Builder:
						bb.Append(arrow.Date32(x))
					case *array.TimestampBuilder:
						bb.Append(arrow.Timestamp(x * 999_999_937))
					}
				}
				full := b.NewArray()
				b.Release()
				lo := rng.IntN(full.Len())
				a := array.NewSlice(full, int64(lo), int64(full.Len()))
				got.add(a)
				foldEach(&want, a)
				a.Release()
				full.Release()
			}
			// Printed, so that -0 and 0 differ.
			if got.nulls != want.nulls || fmt.Sprint(got.min, got.max) != fmt.Sprint(want.min, want.max) {
				t.Fatalf("%s trial %d: stats %v..%v (%d nulls), want %v..%v (%d nulls)", dt, trial,
					got.min, got.max, got.nulls, want.min, want.max, want.nulls)
			}
		}
	}
}
