package pqwrite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The arrow-go kernels the gateway runs, its own calls and iceberg-go's
// (Take and TakeArray: Paimon's partition/bucket split and primary-key
// sort, iceberg-go's partitioned fan-out and dictionary decode; Filter:
// iceberg-go's scans; Cast: arrowconv, Paimon's scan, iceberg-go's
// writer; Concatenate: the engine's result path and Paimon's scan;
// SortIndices: iceberg-go's sorted writer) on every Arrow type the
// gateway accepts, with the gateway's allocator (the process default,
// under the contract check in this package's tests) and with Go's, at
// sizes that cross the kernels' first estimates (64 KiB), 1 MiB and
// 16 MiB: the results must be equal value by value. The Take kernel's
// string case cut values and panicked with an allocator whose buffers had
// spare capacity; the skewed indices (the longest values, repeated) make
// the output outgrow the kernel's estimate, as in the repro.
func TestKernelsAgreeWithGoAllocator(t *testing.T) {
	gateway := memory.DefaultAllocator // Contract-checked under the alloccheck tag
	goa := memory.NewGoAllocator()
	sizes := []int{80 << 10, 1200 << 10, 17 << 20} // bytes of values
	if testing.Short() || raceBuild {
		sizes = sizes[:2]
	}
	for _, dt := range kernelTypes() {
		for _, size := range sizes {
			t.Run(fmt.Sprintf("%s/%d", dt, size), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(size), 7))
				values := genArray(goa, dt, rowsFor(dt, size), rng)
				defer values.Release()
				for _, k := range kernels(values, rng) {
					want, err := k.run(compute.WithAllocator(context.Background(), goa), values)
					if errors.Is(err, arrow.ErrNotImplemented) {
						continue // arrow-go has no such kernel: nothing can call it
					}
					if err != nil {
						t.Fatalf("%s with Go's allocator: %v", k.name, err)
					}
					got, err := k.run(compute.WithAllocator(context.Background(), gateway), values)
					if err != nil {
						t.Fatalf("%s with the gateway's allocator: %v", k.name, err)
					}
					if !array.Equal(want, got) {
						t.Fatalf("%s: results differ between Go's allocator and the gateway's (%d vs %d rows)", k.name, want.Len(), got.Len())
					}
					want.Release()
					got.Release()
				}
			})
		}
	}
}

func kernelTypes() []arrow.DataType {
	return []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.FixedWidthTypes.Boolean, arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64,
		arrow.FixedWidthTypes.Time64us, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Nanosecond},
		&arrow.Decimal128Type{Precision: 18, Scale: 3},
		arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary,
		arrow.BinaryTypes.StringView, &arrow.FixedSizeBinaryType{ByteWidth: 16},
		arrow.ListOf(arrow.BinaryTypes.String), arrow.LargeListOf(arrow.PrimitiveTypes.Int64),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64),
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
	}
}

// rowsFor is the row count whose values take about size bytes.
func rowsFor(dt arrow.DataType, size int) int {
	w := 8
	switch dt := dt.(type) {
	case arrow.FixedWidthDataType:
		w = max(dt.BitWidth()/8, 1)
	case *arrow.StringType, *arrow.LargeStringType, *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.StringViewType:
		w = 100
	case *arrow.ListType, *arrow.MapType:
		w = 150
	case *arrow.LargeListType:
		w = 24
	case *arrow.StructType:
		w = 105
	case *arrow.DictionaryType:
		w = 4
	}
	return max(size/w, 16)
}

// genArray makes n values of dt, a tenth of them null, strings of 1–200
// bytes (the repro).
func genArray(mem memory.Allocator, dt arrow.DataType, n int, rng *rand.Rand) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.Reserve(n)
	for range n {
		if rng.IntN(10) == 0 {
			b.AppendNull()
			continue
		}
		appendValue(b, rng)
	}
	return b.NewArray()
}

func randString(rng *rand.Rand) string {
	s := make([]byte, 1+rng.IntN(200))
	for i := range s {
		s[i] = 'a' + byte(rng.IntN(26))
	}
	return string(s)
}

func appendValue(b array.Builder, rng *rand.Rand) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(rng.Int()))
	case *array.Int16Builder:
		b.Append(int16(rng.Int()))
	case *array.Int32Builder:
		b.Append(rng.Int32())
	case *array.Int64Builder:
		b.Append(rng.Int64())
	case *array.Uint32Builder:
		b.Append(rng.Uint32())
	case *array.Float32Builder:
		b.Append(rng.Float32())
	case *array.Float64Builder:
		b.Append(rng.NormFloat64())
	case *array.BooleanBuilder:
		b.Append(rng.IntN(2) == 0)
	case *array.Date32Builder:
		b.Append(arrow.Date32(rng.Int32N(50000)))
	case *array.Date64Builder:
		b.Append(arrow.Date64(int64(rng.Int32N(50000)) * 86400000))
	case *array.Time64Builder:
		b.Append(arrow.Time64(rng.Int64N(86400e6)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(rng.Int64N(4e18) - 2e18))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(rng.Int64N(1e15)))
	case *array.StringBuilder:
		b.Append(randString(rng))
	case *array.LargeStringBuilder:
		b.Append(randString(rng))
	case *array.StringViewBuilder:
		b.Append(randString(rng))
	case *array.BinaryBuilder: // binary and large binary
		b.Append([]byte(randString(rng)))
	case *array.FixedSizeBinaryBuilder:
		v := make([]byte, 16)
		for i := range v {
			v[i] = byte(rng.Int())
		}
		b.Append(v)
	case *array.ListBuilder:
		b.Append(true)
		for range rng.IntN(3) {
			appendValue(b.ValueBuilder(), rng)
		}
	case *array.LargeListBuilder:
		b.Append(true)
		for range rng.IntN(5) {
			appendValue(b.ValueBuilder(), rng)
		}
	case *array.MapBuilder:
		b.Append(true)
		for k := range rng.IntN(3) {
			b.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint(k, randString(rng)[:1]))
			appendValue(b.ItemBuilder(), rng)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i := range b.NumField() {
			appendValue(b.FieldBuilder(i), rng)
		}
	case *array.BinaryDictionaryBuilder:
		if err := b.AppendString(fmt.Sprint("v", rng.IntN(500), randString(rng)[:1])); err != nil {
			panic(err)
		}
	default:
		panic(fmt.Sprintf("no generator for %T", b))
	}
}

type kernel struct {
	name string
	run  func(ctx context.Context, values arrow.Array) (arrow.Array, error)
}

// kernels are the calls to compare on values, their inputs drawn from rng
// once so that both allocators see the same.
func kernels(values arrow.Array, rng *rand.Rand) []kernel {
	n := values.Len()
	mem := memory.NewGoAllocator()
	random := indices(mem, n, n, rng, nil)
	// The longest values' positions, each taken many times: the output
	// outgrows an estimate made from the input's average.
	skewed := indices(mem, n, n, rng, longest(values))
	mask := array.NewBooleanBuilder(mem)
	for range n {
		if rng.IntN(20) == 0 {
			mask.AppendNull()
		} else {
			mask.Append(rng.IntN(3) != 0)
		}
	}
	filter := mask.NewArray()
	mask.Release()
	ks := []kernel{
		{"take", func(ctx context.Context, v arrow.Array) (arrow.Array, error) {
			return compute.TakeArray(ctx, v, random)
		}},
		{"take-skewed", func(ctx context.Context, v arrow.Array) (arrow.Array, error) {
			return compute.TakeArray(ctx, v, skewed)
		}},
		{"take-record", func(ctx context.Context, v arrow.Array) (arrow.Array, error) {
			rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "c", Type: v.DataType(), Nullable: true}}, nil), []arrow.Array{v}, int64(v.Len()))
			defer rec.Release()
			out, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(rec), compute.NewDatumWithoutOwning(skewed))
			if err != nil {
				return nil, err
			}
			defer out.Release()
			col := out.(*compute.RecordDatum).Value.Column(0)
			col.Retain()
			return col, nil
		}},
		{"filter", func(ctx context.Context, v arrow.Array) (arrow.Array, error) {
			return compute.FilterArray(ctx, v, filter, *compute.DefaultFilterOptions())
		}},
		{"concatenate", func(ctx context.Context, v arrow.Array) (arrow.Array, error) {
			// Slices at odd offsets, as the engine's chunks and Paimon's
			// row groups come.
			third := v.Len() / 3
			parts := []arrow.Array{array.NewSlice(v, 1, int64(third)), array.NewSlice(v, int64(third), int64(v.Len()))}
			defer parts[0].Release()
			defer parts[1].Release()
			return array.Concatenate(append(parts, parts[0]), compute.GetAllocator(ctx))
		}},
	}
	// Sorting is the slow one: up to a million rows (strings cross 16 MiB
	// well below that).
	if sortable(values.DataType()) && n <= 1<<20 {
		ks = append(ks, kernel{"sort-take", func(ctx context.Context, v arrow.Array) (arrow.Array, error) {
			idx, err := compute.SortIndicesArray(ctx, v, compute.DefaultSortKey())
			if err != nil {
				return nil, err
			}
			defer idx.Release()
			return compute.TakeArray(ctx, v, idx)
		}})
	}
	for _, to := range casts(values.DataType()) {
		ks = append(ks, kernel{"cast-" + to.String(), func(ctx context.Context, v arrow.Array) (arrow.Array, error) {
			opts := compute.SafeCastOptions(to)
			opts.AllowTimeTruncate = true
			return compute.CastArray(ctx, v, opts)
		}})
	}
	return ks
}

// indices returns m take indices below n, a twentieth of them null;
// drawn from among only, when it is given.
func indices(mem memory.Allocator, n, m int, rng *rand.Rand, among []int) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for range m {
		switch {
		case rng.IntN(20) == 0:
			b.AppendNull()
		case among != nil:
			b.Append(int64(among[rng.IntN(len(among))]))
		default:
			b.Append(rng.Int64N(int64(n)))
		}
	}
	return b.NewArray()
}

// longest returns the positions of values's longest values (or of any
// value, for fixed-width types).
func longest(values arrow.Array) []int {
	size := func(i int) int { return 0 }
	switch v := values.(type) {
	case array.BinaryLike:
		size = func(i int) int { return v.ValueLen(i) }
	case *array.StringView:
		size = func(i int) int { return len(v.Value(i)) }
	case *array.BinaryView:
		size = func(i int) int { return len(v.Value(i)) }
	}
	best, out := -1, []int(nil)
	for i := range values.Len() {
		if values.IsNull(i) {
			continue
		}
		switch s := size(i); {
		case s > best:
			best, out = s, []int{i}
		case s == best && len(out) < 64:
			out = append(out, i)
		}
	}
	if out == nil {
		out = []int{0}
	}
	return out
}

func sortable(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP, arrow.STRUCT, arrow.DICTIONARY, arrow.BOOL, arrow.STRING_VIEW:
		return false
	}
	return true
}

// casts are the conversions the gateway asks for from dt (arrowconv's
// widening, the scans' retyping).
func casts(dt arrow.DataType) []arrow.DataType {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT32:
		return []arrow.DataType{arrow.PrimitiveTypes.Int64}
	case arrow.FLOAT32:
		return []arrow.DataType{arrow.PrimitiveTypes.Float64}
	case arrow.DATE64:
		return []arrow.DataType{arrow.FixedWidthTypes.Date32}
	case arrow.TIMESTAMP:
		return []arrow.DataType{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: dt.(*arrow.TimestampType).TimeZone}}
	case arrow.DECIMAL128:
		return []arrow.DataType{&arrow.Decimal128Type{Precision: 38, Scale: 3}}
	case arrow.STRING:
		return []arrow.DataType{arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary}
	case arrow.LARGE_STRING, arrow.STRING_VIEW:
		return []arrow.DataType{arrow.BinaryTypes.String}
	case arrow.BINARY:
		return []arrow.DataType{arrow.BinaryTypes.LargeBinary}
	case arrow.LARGE_BINARY:
		return []arrow.DataType{arrow.BinaryTypes.Binary}
	case arrow.DICTIONARY:
		return []arrow.DataType{arrow.BinaryTypes.String}
	case arrow.LARGE_LIST:
		return []arrow.DataType{arrow.ListOf(arrow.PrimitiveTypes.Int64)}
	}
	return nil
}
