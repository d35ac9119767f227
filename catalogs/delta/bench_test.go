package delta_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// BenchmarkAppend: one stream of 100 batches of 10 000 rows (id, name)
// and its commit, on local files. SetBytes counts 16 bytes a row.
func BenchmarkAppend(b *testing.B) {
	p := openLocal(b, "")
	ctx := context.Background()
	id := ident("default", "bench")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		b.Fatal(err)
	}
	batch := catalogtest.Batch(0, 10000)
	defer batch.Release()
	b.SetBytes(int64(100 * 10000 * 16))
	for b.Loop() {
		s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			b.Fatal(err)
		}
		for range 100 {
			if err := s.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		rs, err := s.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Commit(ctx, id, rs); err != nil {
			b.Fatal(err)
		}
	}
}

// ingestBatches are rows shaped as integration/bench/delta/compare.py's
// (int64 ids in order, float64 in ±1000, a 16-byte "tag-" + hex string,
// a UTC timestamp in µs within a year), in batches of 65 536.
func ingestBatches(rows int) []arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	mem := memory.NewGoAllocator()
	var out []arrow.RecordBatch
	for start := 0; start < rows; start += 65536 {
		n := min(65536, rows-start)
		b := array.NewRecordBuilder(mem, sc)
		id, x, tag, ts := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Float64Builder),
			b.Field(2).(*array.StringBuilder), b.Field(3).(*array.TimestampBuilder)
		var hex [6]byte
		for i := range n {
			id.Append(int64(start + i))
			x.Append((rng.Float64() - 0.5) * 2000)
			for k := range hex {
				hex[k] = byte(rng.Uint32())
			}
			tag.Append(fmt.Sprintf("tag-%x", hex[:]))
			ts.Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(365*86400*1_000_000)))
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// BenchmarkIngestShape: one stream of the Delta ingest benchmark's rows
// (FLIGHTGW_BENCH_ROWS, 2M by default) into a new unpartitioned table,
// and its commit, on local files: the encode side of
// make delta-ingest-bench without gRPC. It reports the CPU seconds and
// the bytes of data files per stream.
func BenchmarkIngestShape(b *testing.B) {
	rows := 2_000_000
	if v, err := strconv.Atoi(os.Getenv("FLIGHTGW_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	batches := ingestBatches(rows)
	defer func() {
		for _, r := range batches {
			r.Release()
		}
	}()
	p := openLocal(b, "")
	ctx := context.Background()
	b.SetBytes(int64(rows) * 44)
	n := 0
	var written uint64
	cpu0 := cpuTime()
	for b.Loop() {
		n++
		id := ident("default", fmt.Sprintf("shape%d", n))
		if _, err := p.CreateTable(ctx, id, batches[0].Schema(), nil); err != nil {
			b.Fatal(err)
		}
		s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range batches {
			if err := s.Write(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		rs, err := s.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			written += r.ByteCount
		}
		if _, err := p.Commit(ctx, id, rs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(n), "cpu-s/op")
	b.ReportMetric(float64(written)/1e6/float64(n), "file-MB/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
