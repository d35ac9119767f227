package pqwrite

import (
	czstd "github.com/DataDog/zstd"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Parquet pages are compressed with the C zstd library (through cgo, which
// the gateway links for DuckDB anyway) rather than arrow-go's pure-Go
// encoder: at level 1, on the pages of an ingest, it takes about half the
// CPU (and compression is most of the cost of writing Parquet). The output
// is a standard zstd frame, like the Go encoder's. Pages are decompressed
// by C zstd too: on the query benchmark's pages (int64, float64, short
// strings, timestamps) klauspost's Go decoder was 45% of pqarrow's CPU,
// and C zstd cut a whole decode by about a fifth (engine's
// BenchmarkFileDecode). Registering replaces arrow-go's zstd codec for the
// whole process: every package that reads or writes Parquet imports this
// one.
func init() {
	dec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return // arrow-go has no zstd: keep it so
	}
	compress.RegisterCodec(compress.Codecs.Zstd, cZstd{Codec: dec})
}

// cZstd encodes with C zstd and decodes with the codec it embeds.
type cZstd struct{ compress.Codec }

// zstdCtxs are reusable C contexts (each one to compress and one to
// decompress): creating one per page would cost more than compressing a
// small page. A free list rather than a
// sync.Pool, which the GC empties every other cycle: the contexts' memory
// (a few hundred KB each, from C malloc) would be freed by finalizers and
// malloc'd again by the next pages, out of sight of the Go memory limit.
// It keeps at most maxZstdCtxs idle.
var zstdCtxs = make(chan czstd.Ctx, maxZstdCtxs)

// maxZstdCtxs bounds the idle contexts: more than the gateway's writers
// and readers use at once on the machines it runs on.
const maxZstdCtxs = 16

// getZstdCtx returns an idle context, or a new one.
func getZstdCtx() czstd.Ctx {
	select {
	case c := <-zstdCtxs:
		return c
	default:
		return czstd.NewCtx()
	}
}

// putZstdCtx keeps c for the next page, unless enough are idle.
func putZstdCtx(c czstd.Ctx) {
	select {
	case zstdCtxs <- c:
	default: // its finalizer frees it
	}
}

// Encode compresses src at zstd's default level.
func (z cZstd) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// EncodeLevel compresses src at level (zstd's levels; DefaultCompressionLevel
// is zstd's default, 3). It falls back to the Go encoder if C zstd fails,
// which it only does on a bad level.
func (z cZstd) EncodeLevel(dst, src []byte, level int) []byte {
	if level == compress.DefaultCompressionLevel {
		level = czstd.DefaultCompression
	}
	c := getZstdCtx()
	defer putZstdCtx(c)
	out, err := c.CompressLevel(dst[:cap(dst)], src, level)
	if err != nil {
		return z.Codec.EncodeLevel(dst, src, level)
	}
	return out
}

// Decode decompresses src into dst, which the page reader sizes to the
// page's uncompressed length. It panics on corrupt input, as arrow-go's
// codec does; readers call DecodeWithError.
func (z cZstd) Decode(dst, src []byte) []byte {
	out, err := z.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

// DecodeWithError decompresses src into dst with C zstd. Whatever C zstd
// refuses (a dst too small for the frame, a corrupt frame) is left to
// arrow-go's decoder, so what a bad page yields, bytes or an error, is
// the Go codec's.
func (z cZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	if cap(dst) > 0 {
		// A context of the free list: ZSTD_decompress makes and frees
		// one per page (1% of a direct read's CPU, ZSTD_initDCtx).
		c := getZstdCtx()
		n, err := c.DecompressInto(dst[:cap(dst)], src)
		putZstdCtx(c)
		if err == nil {
			return dst[:n], nil
		}
	}
	if ec, ok := z.Codec.(compress.ErrorCodec); ok {
		return ec.DecodeWithError(dst, src)
	}
	return z.Codec.Decode(dst, src), nil
}

// CompressBound is C zstd's ZSTD_COMPRESSBOUND.
func (cZstd) CompressBound(n int64) int64 { return int64(czstd.CompressBound(int(n))) }
