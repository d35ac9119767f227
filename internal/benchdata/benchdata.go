// Package benchdata generates the rows the ingest benchmarks write, the
// same from every benchmark that uses it: the in-process write
// benchmarks of the Iceberg and Paimon backends and the gateway benches
// under integration/bench.
package benchdata

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Batches generates n distinct batches of rows rows of schema, whose
// columns must be an int64 id, a float64, a string and a timestamp, in
// that order (nullable or not; no value is null), about 44 bytes a row as
// Arrow. The seed is fixed, so every run and every side of a comparison
// reads the same data. The caller releases the batches.
func Batches(schema *arrow.Schema, n, rows int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]arrow.RecordBatch, n)
	for p := range out {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		ids := b.Field(0).(*array.Int64Builder)
		xs := b.Field(1).(*array.Float64Builder)
		tags := b.Field(2).(*array.StringBuilder)
		tss := b.Field(3).(*array.TimestampBuilder)
		base := int64(1_700_000_000_000_000)
		for i := range rows {
			ids.Append(int64(p*rows + i))
			xs.Append(rng.NormFloat64() * 1000)
			tags.Append(fmt.Sprintf("tag-%012x", rng.Uint64()>>16)) // 16 bytes
			tss.Append(arrow.Timestamp(base + rng.Int64N(365*86400*1_000_000)))
		}
		out[p] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

// CPUTime is the process's user and system CPU time: on a shared machine
// it varies far less than the wall time.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
