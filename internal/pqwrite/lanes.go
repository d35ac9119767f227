package pqwrite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// Lanes fans the batches of one upload out to encoder goroutines
// ("lanes"), each writing files of its own, for a writer that is handed
// batches one call at a time (a Paimon or Delta write stream, whose lanes
// run LaneFiles.Run). Parquet encoding is
// the cost of an ingest and one file is encoded on one core: up to n lanes
// encode at once. The first lane works alone until spread bytes have been
// sent, so that a small upload stays one file in its order; then the
// others start, one per further spread bytes, each taking the next batch
// from a shared queue. The queue holds at most one batch per lane, so a
// sender blocks while every lane is busy: what the lanes hold is bounded
// by their number.
//
// (The Iceberg backend's lane writer, which pulls its batches from an
// iterator, follows the same plan with its own loop.)
type Lanes struct {
	queue  chan arrow.RecordBatch
	ctx    context.Context
	cancel context.CancelCauseFunc
	run    func(ctx context.Context, lane int, in <-chan arrow.RecordBatch) error
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error // the first lane error
	n      int
	start  int
	spread int64
	sent   int64
	closed bool
}

// LaneCount is one lane per core, at most limit.
func LaneCount(limit int) int { return min(max(runtime.GOMAXPROCS(0), 1), max(limit, 1)) }

// NewLanes returns lanes that run run, at most n at once. Their context
// is ctx without its cancellation (the lanes outlive the call that opens
// them: they serve every later Send), cancelled by Abort, by a lane's
// error, or by the end of the context of a Send or Close that is waiting.
// run owns each batch it receives (it releases it); it must return when
// in is closed or its context ends.
func NewLanes(ctx context.Context, n int, spread int64, run func(ctx context.Context, lane int, in <-chan arrow.RecordBatch) error) *Lanes {
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	n = max(n, 1)
	return &Lanes{queue: make(chan arrow.RecordBatch, n), ctx: lctx, cancel: cancel, run: run, n: n, spread: spread}
}

func (l *Lanes) startLane() {
	i := l.start
	l.start++
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("lane %d: %v", i, r)
				}
			}()
			return l.run(l.ctx, i, l.queue)
		}()
		if err != nil {
			l.mu.Lock()
			if l.err == nil {
				l.err = err
			}
			l.mu.Unlock()
			l.cancel(err)
		}
	}()
}

// Send hands b to the lanes, which release it. It returns the first lane
// error once a lane has failed, and the cause of ctx when ctx ends while
// every lane is busy (then it stops the lanes: the upload is over); b is
// released in both cases.
func (l *Lanes) Send(ctx context.Context, b arrow.RecordBatch) error {
	if l.closed {
		b.Release()
		return errors.New("send on closed lanes")
	}
	if ctx.Err() != nil {
		b.Release()
		l.cancel(context.Cause(ctx))
		return context.Cause(ctx)
	}
	if l.start == 0 || (l.start < l.n && l.sent >= int64(l.start)*l.spread) {
		l.startLane()
	}
	size := BatchBytes(b) // before the send: then the batch is the lane's
	select {
	case l.queue <- b:
		l.sent += size
		return nil
	case <-l.ctx.Done():
		b.Release()
		return l.failure()
	case <-ctx.Done():
		b.Release()
		l.cancel(context.Cause(ctx))
		return context.Cause(ctx)
	}
}

// SendTo hands the lanes *l a reference of their own to b (the caller
// keeps its own), opening them at the first batch with NewLanes(ctx, n,
// spread, run): a write stream's lanes, whose context is that first
// call's without its cancellation, so that they serve every later Write;
// a Write or Close whose context ends while it waits stops them (Send,
// Close). Its error is the stream's (StreamErr).
func SendTo(ctx context.Context, l **Lanes, n int, spread int64, run func(ctx context.Context, lane int, in <-chan arrow.RecordBatch) error, b arrow.RecordBatch) error {
	if *l == nil {
		*l = NewLanes(ctx, n, spread, run)
	}
	b.Retain() // the lanes' now: they release it
	return (*l).Send(ctx, b)
}

// StreamErr is a lane's error (nil for none) as a write stream into table
// returns it: a backend error keeps its kind and a context's end stays
// itself; any other (a lane's panic) is Unavailable naming the table.
func StreamErr(table catalogs.TableIdent, err error) error {
	if err == nil || catalogs.Kind(err) != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: write data files", table))
}

// failure is why the lanes stopped.
func (l *Lanes) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return context.Cause(l.ctx)
}

// Close closes the queue and waits for the lanes to finish what they
// hold. It returns the first lane error; if ctx ends first it stops the
// lanes, waits for them and returns ctx's cause.
func (l *Lanes) Close(ctx context.Context) error {
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.queue)
	if ctx.Err() != nil {
		l.cancel(context.Cause(ctx)) // the caller has given up: stop at once
	}
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		l.cancel(context.Cause(ctx))
		<-done
		l.drain()
		return context.Cause(ctx)
	}
	l.drain()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancel(nil)
	return l.err
}

// Abort stops the lanes and waits for them.
func (l *Lanes) Abort() {
	l.cancel(errors.New("write aborted"))
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.wg.Wait()
	l.drain()
}

// drain releases what stopped lanes left in the queue (closed by then).
func (l *Lanes) drain() {
	for b := range l.queue {
		b.Release()
	}
}

// BatchBytes is the size of b's buffers.
func BatchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, c := range b.Columns() {
		n += int64(c.Data().SizeInBytes())
	}
	return n
}

// LaneFiles is how a lane makes, fills and closes its files: Run is the
// loop every backend's lane runs (the run of NewLanes), so that what a
// lane does with a file it leaves open on an error is written once. F is
// the backend's open file.
type LaneFiles[F any] struct {
	// Open starts a file for the batch first, its page buffers from mem
	// (one Alloc per lane). The backend lists the file for its stream's
	// cleanup before it returns.
	Open func(ctx context.Context, first arrow.RecordBatch, mem *Alloc) (F, error)
	// Write appends b to f; its error is returned as it is (name the
	// table and file in it).
	Write func(f F, b arrow.RecordBatch) error
	// Size is f's bytes so far; at Target or more the file is finished
	// and the next batch starts another.
	Size   func(f F) int64
	Target int64
	// Finish closes f and records it; it cleans up after its own error.
	Finish func(f F) error
	// Abort closes a file left open by an error or the context's end
	// (the stream's cleanup deletes it).
	Abort func(f F)
}

// Run writes the batches it takes from in into files of its own until in
// is closed or ctx ends, releasing each batch.
func (lf LaneFiles[F]) Run(ctx context.Context, _ int, in <-chan arrow.RecordBatch) (err error) {
	var f F
	open := false
	mem := NewAlloc()
	defer func() {
		if open {
			lf.Abort(f)
		}
	}()
	for {
		var b arrow.RecordBatch
		select {
		case b = <-in:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if b == nil { // in is closed: the upload is complete
			break
		}
		if !open {
			if f, err = lf.Open(ctx, b, mem); err != nil {
				b.Release()
				return err
			}
			open = true
		}
		err = lf.Write(f, b)
		b.Release()
		if err != nil {
			return err
		}
		if lf.Size(f) >= lf.Target {
			open = false
			if err := lf.Finish(f); err != nil {
				return err
			}
		}
	}
	if open {
		open = false
		return lf.Finish(f)
	}
	return nil
}
