package paimon_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// benchSchema is integration/bench/paimon's: about 44 bytes a row, its
// columns nullable (as a pyarrow table's are) with no nulls.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
}, nil)

func benchBatches(n, rows int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]arrow.RecordBatch, n)
	for p := range out {
		b := array.NewRecordBuilder(memory.DefaultAllocator, benchSchema)
		ids := b.Field(0).(*array.Int64Builder)
		xs := b.Field(1).(*array.Float64Builder)
		tags := b.Field(2).(*array.StringBuilder)
		tss := b.Field(3).(*array.TimestampBuilder)
		for i := range rows {
			ids.Append(int64(p*rows + i))
			xs.Append(rng.NormFloat64() * 1000)
			tags.Append(fmt.Sprintf("tag-%012x", rng.Uint64()>>16))
			tss.Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(365*86400*1_000_000)))
		}
		out[p] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

// cpuTime is the process's user and system CPU time: on a shared machine
// it varies far less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStreamWrite is the write path of an ingest into an append
// table (bucket -1) without the transport: 5M rows in batches of 65536
// through OpenStream, Write and Close (go test -bench StreamWrite
// -benchtime 3x).
func BenchmarkStreamWrite(b *testing.B) {
	const batches, rows = 77, 65536
	pool := benchBatches(16, rows)
	p, _ := openLocal(b, nil)
	ctx := context.Background()
	b.SetBytes(int64(batches * rows * 44))
	cpu0 := cpuTime()
	defer func() { b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op") }()
	for i := 0; b.Loop(); i++ {
		id := catalogs.TableIdent{Catalog: p.Name(), Namespace: []string{"default"}, Name: fmt.Sprint("bench", i)}
		if _, err := p.CreateTable(ctx, id, benchSchema); err != nil {
			b.Fatal(err)
		}
		ws, err := p.OpenStream(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		for j := range batches {
			if err := ws.Write(ctx, pool[j%len(pool)]); err != nil {
				b.Fatal(err)
			}
		}
		rs, err := ws.Close(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			var size uint64
			for _, r := range rs {
				size += r.ByteCount
			}
			b.Logf("%d receipts, %d bytes", len(rs), size)
		}
	}
}
