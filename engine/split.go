//go:build duckdb_arrow

package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/catalogs"
)

// A query that only filters and projects the rows of one table whose plan
// is plain (native.go) can be read in parts: each part runs the same query
// over its share of the table's files, and the parts' rows together are
// the query's rows. The gateway turns the parts into FlightInfo endpoints,
// which clients such as ADBC read in parallel. Every part reads the
// snapshot planned when the query was split, so a commit landing between
// the parts' reads changes none of them.

// Split returns the parts q may be read in, or nil when it is read whole:
// it reads more than one table or a table whose plan is not plain, its
// files are fewer than two or smaller than opts.MinBytes, or DuckDB's
// plan for it does anything but filter and project the scan (an
// aggregate, a sort, a limit, DISTINCT, a window, a join, a subquery).
func (e *Engine) Split(ctx context.Context, q string, params arrow.RecordBatch, resolve Resolver, opts SplitOptions) ([]Part, error) {
	if opts.MaxParts < 2 {
		return nil, nil
	}
	c, err := e.connect()
	if err != nil {
		return nil, err
	}
	defer c.close()
	stop := c.interruptOn(ctx)
	defer stop()
	p, sql, err := c.plan(q, resolve, e.pol)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	release, err := c.registerEmpty(p)
	if err != nil {
		return nil, err
	}
	defer release()
	return c.split(ctx, p, sql, params, opts)
}

// split decides the parts of p on a connection where its tables are
// registered: first whether DuckDB's plan only filters and projects one
// scan (no I/O), then the table's file plan.
func (c *conn) split(ctx context.Context, p *plan, sql string, params arrow.RecordBatch, opts SplitOptions) ([]Part, error) {
	if opts.MaxParts < 2 || len(p.refs) != 1 {
		return nil, nil
	}
	if ref := p.refs[0]; ref.table.Staged == nil {
		// A table that is not read from files has no parts (filePlans
		// would say so): spare the EXPLAIN below, a second prepare and
		// run of the query in every GetFlightInfo of a pushed query.
		if _, ok := ref.table.Scanner.(catalogs.FilePlanner); !ok || !p.fileSafe {
			return nil, nil
		}
	}
	ok, err := c.rowLocal(sql, params)
	if err != nil || !ok {
		return nil, err
	}
	plans, err := filePlans(ctx, p, nil)
	if err != nil || plans == nil {
		return nil, err
	}
	fp := plans[0]
	if fp.SnapshotID == nil || len(fp.Files) < 2 {
		return nil, nil
	}
	var total int64
	for _, b := range fp.FileBytes {
		total += b
	}
	if total < opts.MinBytes {
		return nil, nil
	}
	n := min(len(fp.Files), opts.MaxParts)
	parts := make([]Part, n)
	for i := range parts {
		parts[i] = Part{Index: i, Count: n, Snapshot: *fp.SnapshotID}
	}
	return parts, nil
}

// QueryPart runs one part of a split query. The table must still have a
// plain plan at the part's snapshot; when it does not (its schema evolved
// since the split) the part fails with ErrFailedPrecondition, and the
// query must be run again.
func (e *Engine) QueryPart(ctx context.Context, q string, params arrow.RecordBatch, resolve Resolver, part Part) (*Rows, error) {
	if part.Count < 1 || part.Index < 0 || part.Index >= part.Count {
		return nil, errInvalid("query part %d of %d does not exist", part.Index, part.Count)
	}
	c, err := e.connect()
	if err != nil {
		return nil, err
	}
	r := &Rows{eng: e, conn: c, part: &part}
	if err := r.start(ctx, q, params, resolve); err != nil {
		r.Close()
		return nil, e.publicErr(r.plan, err)
	}
	return r, nil
}

// errPartChanged reports a part that can no longer be read as planned.
func errPartChanged(t catalogs.TableIdent, why string) error {
	return catalogs.Errorf(catalogs.ErrFailedPrecondition,
		"table %s changed since the query was split into parts (%s): run the query again", t, why)
}

// partFiles is part i's share of files: files go, largest first, to the
// part with the fewest bytes so far. It depends on the plan alone, so
// every part computes the same shares.
func partFiles(files []string, sizes []int64, parts, i int) []string {
	order := make([]int, len(files))
	for j := range order {
		order[j] = j
	}
	size := func(j int) int64 {
		if j < len(sizes) {
			return sizes[j]
		}
		return 0
	}
	slices.SortFunc(order, func(a, b int) int {
		if sa, sb := size(a), size(b); sa != sb {
			if sa > sb {
				return -1
			}
			return 1
		}
		return strings.Compare(files[a], files[b])
	})
	load := make([]int64, parts)
	var out []string
	for _, j := range order {
		best := 0
		for k := range load {
			if load[k] < load[best] {
				best = k
			}
		}
		// An empty file still counts, so shares of equal files differ.
		load[best] += max(size(j), 1)
		if best == i {
			out = append(out, files[j])
		}
	}
	slices.Sort(out)
	return out
}

// rowLocalOperators are the physical operators of a query each of whose
// rows comes from one row of its single table scan.
var rowLocalOperators = map[string]bool{"PROJECTION": true, "FILTER": true}

// rowLocal asks DuckDB for the physical plan of sql, whose tables are
// registered, and reports whether it only filters and projects one scan.
func (c *conn) rowLocal(sql string, params arrow.RecordBatch) (bool, error) {
	var st duck.PreparedStatement
	defer duck.DestroyPrepare(&st)
	if duck.Prepare(c.c, "EXPLAIN (FORMAT json) "+sql, &st) == duck.StateError {
		return false, classifyMessage(duck.PrepareError(st))
	}
	if err := bindParams(st, params); err != nil {
		return false, err
	}
	var res duck.Result
	defer duck.DestroyResult(&res)
	if duck.ExecutePrepared(st, &res) == duck.StateError {
		return false, classify(duck.ResultErrorType(&res), duck.ResultError(&res))
	}
	rdr, err := newChunkReader(&res)
	if err != nil {
		return false, err
	}
	defer rdr.release()
	var plan string
	for {
		rec, err := rdr.next()
		if err != nil {
			return false, err
		}
		if rec == nil {
			break
		}
		if v, ok := rec.Column(rec.Schema().NumFields() - 1).(*array.String); ok && v.Len() > 0 {
			plan += strings.Clone(v.Value(0))
		}
		rec.Release()
	}
	type node struct {
		Name     string `json:"name"`
		Children []node `json:"children"`
	}
	var roots []node
	if err := json.Unmarshal([]byte(plan), &roots); err != nil || len(roots) != 1 {
		return false, nil
	}
	for n := roots[0]; ; n = n.Children[0] {
		if len(n.Children) == 0 {
			return strings.Contains(n.Name, "SCAN") && n.Name != "DUMMY_SCAN", nil
		}
		if len(n.Children) != 1 || !rowLocalOperators[n.Name] {
			return false, nil
		}
	}
}
