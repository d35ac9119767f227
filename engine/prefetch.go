package engine

import (
	"github.com/flightgw/flightgw/internal/recovered"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// prefetchReader reads a scan on a goroutine of its own and hands its
// batches over an unbuffered channel. DuckDB pulls batches from its own
// threads through the Arrow C stream callbacks; a backend reader may not
// run there (iceberg-go's uses iter.Pull, whose coroutines cannot switch
// on a thread locked by a cgo callback). The goroutine also reads the
// next batch while DuckDB works on the current one; besides the batches
// DuckDB's scan threads hold, the reader holds at most two.
type prefetchReader struct {
	src    array.RecordReader
	schema *arrow.Schema
	ch     chan arrow.RecordBatch
	done   chan struct{}
	wg     sync.WaitGroup
	err    error // set before ch closes
	cur    arrow.RecordBatch
	refs   atomic.Int64
}

var _ array.RecordReader = (*prefetchReader)(nil)

func newPrefetchReader(src array.RecordReader) *prefetchReader {
	r := &prefetchReader{src: src, schema: src.Schema(), ch: make(chan arrow.RecordBatch), done: make(chan struct{})}
	r.refs.Store(1)
	r.wg.Add(1)
	go r.run()
	return r
}

func (r *prefetchReader) run() {
	defer r.wg.Done()
	defer close(r.ch)
	// A backend's reader runs here, off the handler's goroutine: its
	// panic is this scan's error (Err), not the process's end.
	defer recovered.Catch(&r.err, "table scan")
	for r.src.Next() {
		b := r.src.RecordBatch()
		b.Retain()
		select {
		case r.ch <- b:
		case <-r.done:
			b.Release()
			return
		}
	}
	r.err = r.src.Err()
}

// Schema is the scan's schema.
func (r *prefetchReader) Schema() *arrow.Schema { return r.schema }

// Next advances to the next batch.
func (r *prefetchReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	b, ok := <-r.ch
	if !ok {
		return false
	}
	r.cur = b
	return true
}

// RecordBatch is the current batch.
func (r *prefetchReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the current batch.
//
// Deprecated: use RecordBatch.
func (r *prefetchReader) Record() arrow.RecordBatch { return r.cur }

// Err is the scan's error, once the stream has ended.
func (r *prefetchReader) Err() error {
	select {
	case <-r.done:
		return nil
	default:
	}
	return r.err
}

// Retain adds a reference.
func (r *prefetchReader) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one stops the goroutine and
// releases the scan.
func (r *prefetchReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	close(r.done)
	for b := range r.ch {
		b.Release()
	}
	r.wg.Wait()
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.src.Release()
}
