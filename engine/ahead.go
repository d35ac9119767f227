//go:build duckdb_arrow

package engine

import (
	"github.com/apache/arrow-go/v18/arrow"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/internal/recovered"
)

// ahead gathers a result's next batch on a goroutine of its own while the
// caller sends the current one, so that DuckDB's pipeline, the conversion
// to Arrow and the caller's network writes overlap. It holds at most one
// batch beyond the one being gathered.
type ahead struct {
	interrupt func() // stops DuckDB in the middle of a fetch
	batches   chan aheadBatch
	quit      chan struct{}
	done      chan struct{}
}

type aheadBatch struct {
	rec arrow.RecordBatch
	err error
}

// readAhead starts gathering r's batches. The goroutine owns r.rdr until
// stop returns.
func (r *Rows) readAhead() {
	c := r.conn
	a := &ahead{interrupt: func() { duck.Interrupt(c.c) }, batches: make(chan aheadBatch, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	r.ahead = a
	go func() {
		defer close(a.done)
		defer close(a.batches)
		// A panic while gathering is this query's error, sent as the
		// last batch, not the process's end.
		var perr error
		defer func() {
			if perr != nil {
				select {
				case a.batches <- aheadBatch{nil, perr}:
				case <-a.quit:
				}
			}
		}()
		defer recovered.Catch(&perr, "query result")
		for {
			rec, err := r.gather()
			if rec == nil && err == nil {
				return
			}
			select {
			case a.batches <- aheadBatch{rec, err}:
				if err != nil {
					return
				}
			case <-a.quit:
				if rec != nil {
					rec.Release()
				}
				return
			}
		}
	}()
}

// stop ends the goroutine, waits for it, and releases what it gathered
// that nobody took. It does nothing on a nil ahead.
func (a *ahead) stop() {
	if a == nil {
		return
	}
	close(a.quit)
	a.interrupt()
	<-a.done
	for b := range a.batches {
		if b.rec != nil {
			b.rec.Release()
		}
	}
}
