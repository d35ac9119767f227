package pqwrite

import (
	"bytes"
	"math/rand/v2"
	"testing"

	czstd "github.com/DataDog/zstd"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/klauspost/compress/zstd"
)

// A raw frame of every size around the block limit decodes to its input
// with C zstd and with the Go decoder, and C zstd reads its content size.
func TestRawZstdFrame(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 255, 256, 65791, maxRawBlock - 1, maxRawBlock, maxRawBlock + 1, 2 * maxRawBlock, 1<<20 + 3} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		frame := appendRawZstd([]byte("prefix"), src)[len("prefix"):]
		if want := n + 9 + 3*max(1, (n+maxRawBlock-1)/maxRawBlock); len(frame) != want {
			t.Errorf("%d bytes: frame of %d bytes, want %d", n, len(frame), want)
		}
		got, err := czstd.Decompress(nil, frame)
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("%d bytes: C zstd read %d bytes, %v", n, len(got), err)
		}
		if n > 0 { // DecompressInto indexes its buffer: not an empty one
			into := make([]byte, n)
			if k, err := czstd.DecompressInto(into, frame); err != nil || k != n || !bytes.Equal(into, src) {
				t.Errorf("%d bytes: C zstd into a buffer of its size: %d, %v", n, k, err)
			}
		}
		got, err = dec.DecodeAll(frame, nil)
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("%d bytes: the Go decoder read %d bytes, %v", n, len(got), err)
		}
	}
}

// FlatWriter stores the pages of an incompressible column in raw zstd
// blocks (a chunk about as large as its pages, where pqarrow's saves 5%),
// compresses a compressible column, and finds out when a column stored
// raw turns compressible (its probe): on V1 and V2 pages, the rows read
// back as written.
func TestFlatWriterStoresIncompressiblePagesRaw(t *testing.T) {
	const n = 1 << 18
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "measure", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: "turns", Type: arrow.PrimitiveTypes.Float64}, // random, then zeros
	}, nil)
	r := rand.New(rand.NewPCG(8, 9))
	m, c, tu := make([]float64, n), make([]int64, n), make([]float64, n)
	for i := range n {
		m[i] = (r.Float64() - 0.5) * 2000
		c[i] = int64(i % 100)
		if i < n/2 {
			tu[i] = r.NormFloat64()
		}
	}
	cols := []arrow.Array{floatArray(m), int64Array(c), floatArray(tu)}
	b := array.NewRecordBatch(sc, cols, n)
	defer b.Release()
	for _, a := range cols {
		a.Release()
	}
	for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		props := []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithCompressionLevel(1), parquet.WithDataPageSize(32 << 10), parquet.WithDataPageVersion(v)}
		flat, ref := writeBoth(t, sc, props, []arrow.RecordBatch{b})
		ft, fmd := readTable(t, flat)
		defer ft.Release()
		rt, rmd := readTable(t, ref)
		defer rt.Release()
		if !array.TableEqual(ft, rt) {
			t.Fatalf("pages v%d: FlatWriter's rows differ from pqarrow's", v)
		}
		ratio := func(md *metadata.FileMetaData, col int) float64 {
			cc, err := md.RowGroup(0).ColumnChunk(col)
			if err != nil {
				t.Fatal(err)
			}
			return float64(cc.TotalCompressedSize()) / float64(cc.TotalUncompressedSize())
		}
		if got, want := ratio(fmd, 0), ratio(rmd, 0); got < 0.99 || want > 0.97 {
			t.Errorf("pages v%d, random measures: chunk %.3f of its pages (want raw, above 0.99); pqarrow's %.3f (want below 0.97)", v, got, want)
		}
		if got := ratio(fmd, 1); got > 0.2 {
			t.Errorf("pages v%d, counts: chunk %.3f of its pages, want compressed (below 0.2)", v, got)
		}
		if got := ratio(fmd, 2); got > 0.6 {
			t.Errorf("pages v%d, random then zeros: chunk %.3f of its pages, want its second half compressed (below 0.6)", v, got)
		}
	}
}

func floatArray(vs []float64) arrow.Array {
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vs, nil)
	return b.NewArray()
}

func int64Array(vs []int64) arrow.Array {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vs, nil)
	return b.NewArray()
}
