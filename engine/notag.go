//go:build !duckdb_arrow

package engine

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// Built reports whether this binary has the SQL engine; it is false in a
// build without BuildTag, where New reports ErrNoEngine.
const Built = false

// Engine is absent from this build.
type Engine struct{}

// New reports ErrNoEngine.
func New(Options) (*Engine, error) { return nil, ErrNoEngine }

// Close does nothing.
func (e *Engine) Close() error { return nil }

// Describe reports ErrNoEngine.
func (e *Engine) Describe(context.Context, string, Resolver) (*Description, error) {
	return nil, ErrNoEngine
}

// Query reports ErrNoEngine.
func (e *Engine) Query(context.Context, string, arrow.RecordBatch, Resolver) (*Rows, error) {
	return nil, ErrNoEngine
}

// Rows is a query result.
type Rows struct{}

// Schema is nil.
func (r *Rows) Schema() *arrow.Schema { return nil }

// Next is false.
func (r *Rows) Next() bool { return false }

// RecordBatch is nil.
func (r *Rows) RecordBatch() arrow.RecordBatch { return nil }

// Err is ErrNoEngine.
func (r *Rows) Err() error { return errors.Join(ErrNoEngine) }

// Scans is empty.
func (r *Rows) Scans() []ScanStats { return nil }

// Origins are the origins of the result's columns: none.
func (r *Rows) Origins() []Origin { return nil }

// Close does nothing.
func (r *Rows) Close() {}

// Split reports ErrNoEngine.
func (e *Engine) Split(context.Context, string, arrow.RecordBatch, Resolver, SplitOptions) ([]Part, error) {
	return nil, ErrNoEngine
}

// QueryPart reports ErrNoEngine.
func (e *Engine) QueryPart(context.Context, string, arrow.RecordBatch, Resolver, Part) (*Rows, error) {
	return nil, ErrNoEngine
}

// QueryPushed reports ErrNoEngine.
func (e *Engine) QueryPushed(context.Context, catalogs.PushedQuery, []Origin, Resolver) (*Rows, bool, error) {
	return nil, false, ErrNoEngine
}

// DescribeSplit reports ErrNoEngine.
func (e *Engine) DescribeSplit(context.Context, string, Resolver, SplitOptions) (*Description, []Part, error) {
	return nil, nil, ErrNoEngine
}

// MemoryUsage reports ErrNoEngine.
func (e *Engine) MemoryUsage() (int64, error) { return 0, ErrNoEngine }
