//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/catalogs"
)

// startPushed hands the query to its tables' backend whole when the rule
// of pushquery.go allows it; ok is false when the engine is to run it.
// The result keeps the engine's typing of the query (what Describe told
// the client): DuckDB binds it over empty tables for the schema, and the
// backend converts its rows to that.
func (r *Rows) startPushed(ctx context.Context, query string, p *plan, sql string, params arrow.RecordBatch) (ok bool, err error) {
	if r.part != nil || (params != nil && params.NumCols() > 0) {
		return false, nil
	}
	pusher, q, ok := pushable(p.text, p)
	if !ok {
		return false, nil
	}
	release, err := r.conn.registerEmpty(p)
	if err != nil {
		return false, err
	}
	var st duck.PreparedStatement
	if duck.Prepare(r.conn.c, sql, &st) == duck.StateError {
		err = ctxErr(ctx, classifyMessage(duck.PrepareError(st)))
		duck.DestroyPrepare(&st)
		release()
		return false, err
	}
	d, err := describe(r.conn, st)
	duck.DestroyPrepare(&st)
	release()
	if err != nil {
		return false, err
	}
	if d.Params.NumFields() > 0 {
		return false, nil
	}
	q.Schema = r.eng.publicNames(p, d.Schema)
	rdr, err := pusher.PushQuery(ctx, q)
	switch {
	case errors.Is(err, catalogs.ErrInvalidArgument), errors.Is(err, catalogs.ErrFailedPrecondition):
		// SQL the backend reads otherwise than DuckDB: the engine runs it.
		return false, nil
	case err != nil:
		return false, err
	}
	r.pushed = rdr
	for _, t := range q.Tables {
		r.scans = append(r.scans, ScanStats{Table: t, Pushed: true})
	}
	return true, nil
}

// nextPushed advances the backend's result.
func (r *Rows) nextPushed() bool {
	if r.err != nil || !r.pushed.Next() {
		if r.err == nil {
			r.err = r.pushed.Err()
		}
		return false
	}
	r.cur = r.pushed.RecordBatch()
	r.cur.Retain()
	return true
}
