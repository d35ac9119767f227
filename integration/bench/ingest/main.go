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
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	{Name: "tag", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

const poolSize = 16

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
	pool := makePool(batchRows)
	defer func() {
		for _, b := range pool {
			b.Release()
		}
	}()
	arrowBytes := total * bytesPerRow(pool[0])
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
	pool := makePool(batchRows)
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

func makePool(n int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]arrow.RecordBatch, poolSize)
	for p := range out {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		ids := b.Field(0).(*array.Int64Builder)
		xs := b.Field(1).(*array.Float64Builder)
		tags := b.Field(2).(*array.StringBuilder)
		tss := b.Field(3).(*array.TimestampBuilder)
		base := int64(1_700_000_000_000_000)
		for i := range n {
			ids.Append(int64(p*n + i))
			xs.Append(rng.NormFloat64() * 1000)
			tags.Append(fmt.Sprintf("tag-%012x", rng.Uint64()>>16)) // 16 bytes
			tss.Append(arrow.Timestamp(base + rng.Int64N(365*86400*1_000_000)))
		}
		out[p] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

func bytesPerRow(b arrow.RecordBatch) int64 {
	var n int64
	for _, c := range b.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n / b.NumRows()
}

// source streams total rows from the pool without copying.
type source struct {
	pool      []arrow.RecordBatch
	remaining int64
	i         int
	cur       arrow.RecordBatch
	refs      int64
}

func newSource(pool []arrow.RecordBatch, total int64) *source {
	return &source{pool: pool, remaining: total, refs: 1}
}

func (s *source) Schema() *arrow.Schema          { return schema }
func (s *source) Retain()                        { s.refs++ }
func (s *source) Release()                       { s.refs-- }
func (s *source) RecordBatch() arrow.RecordBatch { return s.cur }
func (s *source) Record() arrow.RecordBatch      { return s.cur }
func (s *source) Err() error                     { return nil }
func (s *source) Next() bool {
	if s.cur != nil && s.cur != s.pool[(s.i-1)%len(s.pool)] {
		s.cur.Release()
	}
	if s.remaining <= 0 {
		s.cur = nil
		return false
	}
	b := s.pool[s.i%len(s.pool)]
	s.i++
	if b.NumRows() > s.remaining {
		b = b.NewSlice(0, s.remaining)
	}
	s.remaining -= b.NumRows()
	s.cur = b
	return true
}

func reference(path string, pool []arrow.RecordBatch, total int64) (time.Duration, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := time.Now()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1<<20))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return 0, err
	}
	src := newSource(pool, total)
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--data-dir", dataDir, "--listen", addr)
	cmd.Env = append(os.Environ(), "FLIGHTGW_LOG_LEVEL=warn", fmt.Sprintf("FLIGHTGW_MEMORY_LIMIT=%d", memoryLimit))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 600 {
			return 0, 0, fmt.Errorf("gateway did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx := context.Background()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer cnxn.Close()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, 0, err
	}
	defer stmt.Close()
	stmt.SetOption(adbc.OptionKeyIngestTargetTable, "bench")
	stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeCreate)
	start := time.Now()
	if err := stmt.BindStream(ctx, newSource(pool, total)); err != nil {
		return 0, 0, err
	}
	n, err := stmt.ExecuteUpdate(ctx)
	if err != nil {
		return 0, 0, err
	}
	dur := time.Since(start)
	if n != total {
		return 0, 0, fmt.Errorf("gateway ingested %d rows, want %d", n, total)
	}
	rss, err := peakRSS(cmd.Process.Pid)
	return dur, rss, err
}

// peakRSS reads VmHWM (peak resident set) of pid.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}
