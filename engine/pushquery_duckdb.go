//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"slices"

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

// QueryPushed runs q, a query DescribeSplit found its tables' backend
// runs whole (Description.Pushed), without DuckDB: no parse, no empty
// streams, no prepare, the result typed as q.Schema (what the describe
// told the client), with the given origins. Each table is resolved again
// for the caller, so its realm and rights are checked as for any query.
// ok is false when the query is no longer the backend's to run whole (a
// table now resolves elsewhere or is not a QueryPusher's, the caller's
// transaction has writes staged to it) or the backend refuses its SQL
// as startPushed's fallback does: the caller then runs it by Query.
func (e *Engine) QueryPushed(ctx context.Context, q catalogs.PushedQuery, origins []Origin, resolve Resolver) (*Rows, bool, error) {
	if len(q.Tables) == 0 || len(q.Fragments) != len(q.Tables)+1 || q.Schema == nil {
		return nil, false, nil
	}
	var pusher catalogs.QueryPusher
	for _, id := range q.Tables {
		if len(id.Namespace) != 1 {
			return nil, false, nil
		}
		t, err := resolve(id.Catalog, id.Namespace[0], id.Name)
		if err != nil {
			return nil, false, err
		}
		qp, ok := t.Scanner.(catalogs.QueryPusher)
		if !ok || t.Staged != nil || !sameTable(t.Ident, id) || t.Ident.Catalog != q.Tables[0].Catalog {
			return nil, false, nil
		}
		if pusher == nil {
			pusher = qp
		}
	}
	rdr, err := pusher.PushQuery(ctx, q)
	switch {
	case errors.Is(err, catalogs.ErrInvalidArgument), errors.Is(err, catalogs.ErrFailedPrecondition):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	r := &Rows{eng: e, pushed: rdr, origins: origins}
	for _, t := range q.Tables {
		r.scans = append(r.scans, ScanStats{Table: t, Pushed: true})
	}
	return r, true, nil
}

// sameTable reports whether a and b name the same table.
func sameTable(a, b catalogs.TableIdent) bool {
	return a.Catalog == b.Catalog && a.Name == b.Name && slices.Equal(a.Namespace, b.Namespace)
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
