package txn

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// Observer is told what the unit of work did, for metrics; the server sets
// one with WithObserver. Its methods are called on the write's goroutine
// and must be quick and safe for concurrent use.
type Observer interface {
	// Wrote reports a write that succeeded (committed on its own or joined
	// to a transaction): the rows it wrote and their size as Arrow
	// buffers. A repeated idempotent write, which writes nothing, is not
	// reported.
	Wrote(table catalogs.TableIdent, rows, bytes int64)
	// Committed reports one table's commit attempt: its outcome when err
	// is nil, else the error (an outcome-unknown error wraps
	// catalogs.ErrUnavailable).
	Committed(table catalogs.TableIdent, out catalogs.CommitOutcome, err error)
}

// WithObserver sets the Observer a Manager reports to (none by default).
func WithObserver(o Observer) Option {
	return func(m *Manager) {
		if o != nil {
			m.obs = o
		}
	}
}

// noObserver is the Observer of a Manager given none.
type noObserver struct{}

func (noObserver) Wrote(catalogs.TableIdent, int64, int64)                      {}
func (noObserver) Committed(catalogs.TableIdent, catalogs.CommitOutcome, error) {}

// Write is the one write path of the gateway (see write). It reports a
// write that succeeded to the Manager's Observer.
func (m *Manager) Write(ctx context.Context, w Write, src Source) (Result, error) {
	cs := &countingSource{Source: src}
	res, err := m.write(ctx, w, cs)
	if err == nil && !res.Repeated {
		m.obs.Wrote(w.Table, res.Rows, cs.bytes)
	}
	return res, err
}

// countingSource adds up the Arrow size of the batches read from a Source.
type countingSource struct {
	Source
	bytes int64
}

func (c *countingSource) RecordBatch() arrow.RecordBatch {
	b := c.Source.RecordBatch()
	if b != nil {
		c.bytes += batchBytes(b)
	}
	return b
}

// observeAll reports an atomic commit of several tables: each table's
// outcome, or the one error to every table.
func (m *Manager) observeAll(staged []*Staged, outs []catalogs.CommitOutcome, err error) {
	for i, s := range staged {
		var out catalogs.CommitOutcome
		if err == nil && i < len(outs) {
			out = outs[i]
		}
		m.obs.Committed(s.Table, out, err)
	}
}

// batchBytes is the size of a batch's buffers, children and dictionaries
// included (arrow/util's TotalRecordSize, which would add a module).
func batchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, col := range b.Columns() {
		n += dataBytes(col.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		// Dictionary() is a typed nil, not nil, on other types.
		n += dataBytes(d.Dictionary())
	}
	return n
}
