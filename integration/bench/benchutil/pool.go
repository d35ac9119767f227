package benchutil

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/internal/benchdata"
)

// Schema is the rows of the ingest benchmarks: (int64, float64, a 16-byte
// string, a timestamp), about 44 bytes a row as Arrow.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	{Name: "tag", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

// poolSize is how many distinct batches a pool holds: enough that a
// stream is not one batch repeated, few enough to stay in memory.
const poolSize = 16

// Pool generates poolSize distinct batches of n rows of Schema, from a
// fixed seed so that every run and every side of a comparison reads the
// same data. The caller releases them (Release).
func Pool(n int) []arrow.RecordBatch {
	return benchdata.Batches(Schema, poolSize, n)
}

// Release releases every batch of a pool.
func Release(pool []arrow.RecordBatch) {
	for _, b := range pool {
		b.Release()
	}
}

// BytesPerRow is the Arrow buffer bytes of b per row, to turn rows/s into
// MB/s.
func BytesPerRow(b arrow.RecordBatch) int64 {
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

// Source streams total rows from a pool without copying (an
// array.RecordReader): it cycles through the batches and slices the last
// one, so that generation costs nothing inside the timing.
type Source struct {
	pool      []arrow.RecordBatch
	remaining int64
	i         int
	cur       arrow.RecordBatch
}

// NewSource streams total rows from pool.
func NewSource(pool []arrow.RecordBatch, total int64) *Source {
	return &Source{pool: pool, remaining: total}
}

// Schema is Schema: the pool's.
func (s *Source) Schema() *arrow.Schema { return Schema }

// Retain does nothing: the pool owns the batches.
func (s *Source) Retain() {}

// Release does nothing: the pool owns the batches.
func (s *Source) Release() {}

// RecordBatch is the current batch.
func (s *Source) RecordBatch() arrow.RecordBatch { return s.cur }

// Record is the current batch (the older name of RecordBatch).
func (s *Source) Record() arrow.RecordBatch { return s.cur }

// Err is nil: a pool cannot fail.
func (s *Source) Err() error { return nil }

// Next moves to the next batch, releasing the slice it made of the last.
func (s *Source) Next() bool {
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
