//go:build duckdb_arrow

package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/catalogs"
)

// BenchmarkFileDecode compares the CPU a plain SELECT * costs on the
// native path (duckdb: DuckDB decodes the Parquet files and the engine
// gathers its vectors into Arrow batches), on the direct path (direct:
// the plain reader, plainread.go; direct-pqarrow: pqarrow) and with bare pqarrow readers, one per file (the
// pages decompressed by the process's zstd codec, C zstd once
// internal/pqwrite is linked). It reads the files of FLIGHTGW_BENCH_PARQUET_DIR (the
// Parquet files of one table, e.g. the data directory
// integration/bench/query/peer.py's ingest leaves) and reports the
// process's CPU seconds per read (user and system, DuckDB's threads
// included), the figure a loaded machine moves least:
//
//	FLIGHTGW_BENCH_PARQUET_DIR=<dir> go test ./engine -run '^$' -bench FileDecode -benchtime 5x
func BenchmarkFileDecode(b *testing.B) {
	dir := os.Getenv("FLIGHTGW_BENCH_PARQUET_DIR")
	if dir == "" {
		b.Skip("FLIGHTGW_BENCH_PARQUET_DIR is not set")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no Parquet files in %s (%v)", dir, err)
	}
	schema := fileSchema(b, files[0])
	for _, v := range []struct {
		name          string
		direct, plain bool
	}{
		{"duckdb", false, false},
		{"direct-pqarrow", true, false}, // the direct path decoding with pqarrow only
		{"direct", true, true},          // the engine's direct path (direct.go, plainread.go)
	} {
		b.Run(v.name, func(b *testing.B) {
			directScans, plainReads = v.direct, v.plain
			defer func() { directScans, plainReads = true, true }()
			engineReads(b, dir, files, schema)
		})
	}
	pool := newBufferPool(defaultPoolBytes)
	for _, v := range []struct {
		name     string
		parallel bool // pqarrow decodes a batch's columns on goroutines of their own
		mem      func() memory.Allocator
	}{
		{"pqarrow", false, func() memory.Allocator { return memory.NewGoAllocator() }},
		{"pqarrow-columns", true, func() memory.Allocator { return memory.NewGoAllocator() }},
		{"pqarrow-pool", false, func() memory.Allocator { return pool }},
	} {
		b.Run(v.name, func(b *testing.B) {
			cpuPerRead(b, func() int64 {
				// One file per goroutine, as the gateway's two endpoints
				// read the benchmark table's two files.
				var (
					wg    sync.WaitGroup
					mu    sync.Mutex
					total int64
				)
				for _, f := range files {
					wg.Add(1)
					go func() {
						defer wg.Done()
						n := decodeFile(b, f, v.parallel, v.mem())
						mu.Lock()
						total += n
						mu.Unlock()
					}()
				}
				wg.Wait()
				return total
			})
		})
	}
}

// decodeFile reads every row group of f into Arrow batches of 64Ki rows,
// releasing each, and returns the rows read.
func decodeFile(b *testing.B, f string, parallel bool, mem memory.Allocator) int64 {
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	pf, err := file.OpenParquetFile(f, false, file.WithReadProps(props))
	if err != nil {
		b.Error(err)
		return 0
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: parallel, BatchSize: 64 << 10}, mem)
	if err != nil {
		b.Error(err)
		return 0
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer rr.Release()
	var n int64
	for rr.Next() {
		n += rr.RecordBatch().NumRows()
	}
	if err := rr.Err(); err != nil {
		b.Error(err)
	}
	return n
}

// fileSchema is the Arrow schema pqarrow reads from f.
func fileSchema(b testing.TB, f string) *arrow.Schema {
	pf, err := file.OpenParquetFile(f, false)
	if err != nil {
		b.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	s, err := fr.Schema()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuPerRead runs read b.N times and reports the process's CPU seconds
// per read and the rows read per wall second.
func cpuPerRead(b *testing.B, read func() int64) {
	read() // untimed: warms the page cache and the allocators
	var r0, r1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	start := time.Now()
	b.ResetTimer()
	var rows int64
	for range b.N {
		rows += read()
	}
	b.StopTimer()
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/read")
	b.ReportMetric(float64(rows)/wall.Seconds()/1e6, "Mrows/s")
}

// engineReads runs SELECT * over the files through the engine, which
// takes the native (or the direct) path.
func engineReads(b *testing.B, dir string, files []string, schema *arrow.Schema) {
	eng, err := New(Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	sc := &planScanner{root: filepath.Dir(dir), files: map[string][]string{"t": files}, plain: true}
	resolve := func(_, _, name string) (Table, error) {
		return Table{Ident: catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: name},
			Scanner: sc, Schema: schema}, nil
	}
	cpuPerRead(b, func() int64 {
		r, err := eng.Query(context.Background(), "SELECT * FROM t", nil, resolve)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		var n int64
		for r.Next() {
			n += r.RecordBatch().NumRows()
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		return n
	})
}
