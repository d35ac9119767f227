// Command ingest benchmarks bulk ingest through the gateway against the
// same data written in-process with pqarrow, in the same run.
//
//	go run ./integration/bench/ingest -bin bin/flightgw [-rows 10000000]
//
// It generates rows of (int64, float64, a 16-byte string, a timestamp),
// about 44 bytes a row as Arrow, from a pool of distinct batches that both
// phases cycle through, so generation costs the same in both:
//
//  1. reference: pqarrow writes the stream to a local Parquet file with the
//     gateway's compression (zstd) and row group size (1Mi rows);
//  2. gateway: a flightgw process on loopback, with the embedded Iceberg
//     default in a fresh data dir, ingests the stream from the ADBC Go
//     driver (mode create, auto-commit).
//
// It prints rows/s and MB/s of each, their ratio, and the gateway's peak
// RSS (VmHWM from /proc). The gateway runs twice: with its default
// configuration, and with limits.memory_limit set (a soft Go heap limit).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/integration/bench/benchutil"
)

func main() {
	bin := flag.String("bin", "bin/flightgw", "gateway binary")
	total := flag.Int64("rows", 10_000_000, "rows to ingest")
	batchRows := flag.Int("batch", 65536, "rows per Arrow batch")
	once := flag.Bool("once", false, "run one gateway ingest (default config) and print \"seconds rss_bytes\"; compare.py uses it")
	flag.Parse()
	if *once {
		err := runOnce(*bin, *total, *batchRows)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, *total, *batchRows); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin string, total int64, batchRows int) error {
	pool := benchutil.Pool(batchRows)
	defer benchutil.Release(pool)
	arrowBytes := total * benchutil.BytesPerRow(pool[0])
	tmp, err := os.MkdirTemp("", "flightgw-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	refDur, err := reference(filepath.Join(tmp, "ref.parquet"), pool, total)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	mb := float64(arrowBytes) / 1e6
	fmt.Printf("rows %d, Arrow %.0f MB, batches of %d rows\n", total, mb, batchRows)
	fmt.Printf("%-44s %8.2fs %12.0f rows/s %8.1f MB/s\n", "in-process pqarrow (zstd):", refDur.Seconds(), float64(total)/refDur.Seconds(), mb/refDur.Seconds())
	// The gateway with its defaults, then with a soft Go heap limit
	// (limits.memory_limit), which trades GC work for a lower peak.
	for _, limit := range []int64{0, memLimit} {
		name := "gateway ADBC ingest, default config:"
		if limit > 0 {
			name = fmt.Sprintf("gateway ADBC ingest, memory_limit %d MiB:", limit>>20)
		}
		gwDur, rss, err := throughGateway(bin, filepath.Join(tmp, fmt.Sprint("gw", limit)), pool, total, limit)
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		fmt.Printf("%-44s %8.2fs %12.0f rows/s %8.1f MB/s  ratio %.2f (target >= 0.85)  peak RSS %.0f MB (target <= 300)\n",
			name, gwDur.Seconds(), float64(total)/gwDur.Seconds(), mb/gwDur.Seconds(), refDur.Seconds()/gwDur.Seconds(), float64(rss)/1e6)
	}
	return nil
}

// runOnce is one round of compare.py's Go ADBC side: one gateway ingest
// with the default configuration, printed as seconds and peak RSS bytes.
func runOnce(bin string, total int64, batchRows int) error {
	pool := benchutil.Pool(batchRows)
	defer benchutil.Release(pool)
	tmp, err := os.MkdirTemp("", "flightgw-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dur, rss, err := throughGateway(bin, filepath.Join(tmp, "gw"), pool, total, 0)
	if err != nil {
		return err
	}
	fmt.Printf("%.4f %d\n", dur.Seconds(), rss)
	return nil
}

// memLimit is the soft heap limit of the second gateway run.
const memLimit = 160 << 20

func reference(path string, pool []arrow.RecordBatch, total int64) (time.Duration, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := time.Now()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1<<20))
	w, err := pqarrow.NewFileWriter(benchutil.Schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return 0, err
	}
	src := benchutil.NewSource(pool, total)
	for src.Next() {
		if err := w.WriteBuffered(src.RecordBatch()); err != nil {
			return 0, err
		}
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func throughGateway(bin, dataDir string, pool []arrow.RecordBatch, total, memoryLimit int64) (time.Duration, int64, error) {
	gw, err := benchutil.StartGateway(bin, []string{fmt.Sprintf("FLIGHTGW_MEMORY_LIMIT=%d", memoryLimit)}, "--data-dir", dataDir)
	if err != nil {
		return 0, 0, err
	}
	defer gw.Stop()
	opts := map[string]string{adbc.OptionKeyIngestTargetTable: "bench", adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate}
	dur, err := benchutil.Ingest(context.Background(), gw.Addr, opts, benchutil.NewSource(pool, total), total)
	if err != nil {
		return 0, 0, err
	}
	rss, err := gw.PeakRSS()
	return dur, rss, err
}
