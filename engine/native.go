//go:build duckdb_arrow

package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/catalogs"
)

// The native path: when every table of a query has a plain file plan
// (catalogs.FilePlanner), DuckDB reads the planned Parquet files itself
// with read_parquet, its optimizer whole (projection and filter pushdown
// into the files, parallel row groups), instead of an Arrow stream from
// the catalog scan.
//
// Such a query runs in a DuckDB of its own, opened per set of warehouse
// roots, that differs from the engine's in two ways only: no optimizer is
// disabled (no Arrow stream is ever scanned there), and allowed_directories
// lists those roots, which stay readable with enable_external_access off.
// What may read them is the gateway alone:
//   - the files reach DuckDB only in a view the gateway writes on the
//     query's own connection, under the query's private name;
//   - user SQL is parsed first, and a table function outside a small
//     allowlist (range, generate_series, unnest) is refused, so read_parquet,
//     glob, query and the like never run, wherever they would point;
//   - every table name of user SQL is resolved for the caller (a path is no
//     table), and a query whose SQL could still make DuckDB take a name for
//     a file (DESCRIBE/SUMMARIZE, a non-identifier CTE name) takes the
//     stream path, where no file is readable.

// maxNatives bounds the DuckDBs opened for root sets; past it, queries of
// new root sets take the stream path.
const maxNatives = 16

// natives are the DuckDBs of the native path, by root set.
type natives struct {
	mu  sync.Mutex
	dbs map[string]*nativeDB
}

// nativeDB is one native DuckDB and its idle connections.
type nativeDB struct {
	db duck.Database
	// pool holds connections made before the lock, each with a larger
	// streaming buffer than DuckDB's default (a setting of the
	// connection, which the locked configuration keeps from being set
	// later): with ~1MB DuckDB's workers stall on a full buffer between
	// fetches.
	pool   chan *conn
	mu     sync.Mutex
	closed bool
}

// nativeConns is the number of pooled connections of a native DuckDB; a
// query finding none idle gets a fresh one with DuckDB's default buffer.
const nativeConns = 8

// streamingBuffer is the streaming_buffer_size of pooled connections.
const streamingBuffer = "32MB"

// get returns the DuckDB allowed to read roots, opening it on first use;
// nil when too many are open already.
func (n *natives) get(opts Options, roots []string) (*nativeDB, error) {
	key := strings.Join(roots, "\x00")
	n.mu.Lock()
	defer n.mu.Unlock()
	if db, ok := n.dbs[key]; ok {
		return db, nil
	}
	if len(n.dbs) >= maxNatives {
		return nil, nil
	}
	db, err := openNative(opts, roots)
	if err != nil {
		return nil, err
	}
	if n.dbs == nil {
		n.dbs = map[string]*nativeDB{}
	}
	n.dbs[key] = db
	return db, nil
}

func (n *natives) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, db := range n.dbs {
		db.close()
		delete(n.dbs, k)
	}
}

// openNative opens a DuckDB locked down like the engine's, whose only
// readable files are under roots. allowed_directories cannot be set
// through the C API's config, so the lock-down ends with SET statements
// on a first connection, lock_configuration last; the pooled connections
// are made just before it.
func openNative(opts Options, roots []string) (*nativeDB, error) {
	n := &nativeDB{pool: make(chan *conn, nativeConns)}
	err := open(&n.db, append(resources(opts),
		setting{"autoinstall_known_extensions", "false"},
		setting{"autoload_known_extensions", "false"},
		setting{"allow_community_extensions", "false"},
		setting{"allow_unsigned_extensions", "false"},
	))
	if err != nil {
		return nil, err
	}
	c, err := connect(n.db)
	if err != nil {
		n.close()
		return nil, err
	}
	defer c.close()
	dirs := make([]string, len(roots))
	for i, r := range roots {
		// A prefix: without the slash /wh would also allow /wh2.
		dirs[i] = sqlString(r + "/")
	}
	for _, st := range []string{
		// DuckDB would otherwise keep the bytes it read from the files in
		// its buffer pool; they are read once per query and stream out.
		"SET enable_external_file_cache = false",
		"SET allowed_directories = [" + strings.Join(dirs, ", ") + "]",
		"SET enable_external_access = false",
	} {
		if err := c.exec(st); err != nil {
			n.close()
			return nil, fmt.Errorf("engine: native lock-down: %w", err)
		}
	}
	for range nativeConns {
		pc, err := connect(n.db)
		if err == nil {
			err = pc.exec("SET streaming_buffer_size = " + sqlString(streamingBuffer))
		}
		if err != nil {
			n.close()
			return nil, fmt.Errorf("engine: native connection: %w", err)
		}
		n.pool <- pc
	}
	if err := c.exec("SET lock_configuration = true"); err != nil {
		n.close()
		return nil, fmt.Errorf("engine: native lock-down: %w", err)
	}
	return n, nil
}

// conn returns an idle pooled connection, or a new one.
func (n *nativeDB) conn() (*conn, error) {
	select {
	case c := <-n.pool:
		return c, nil
	default:
		return connect(n.db)
	}
}

// put takes back a query's connection once its result is destroyed: the
// query's views are dropped and the connection pooled, or closed when
// that fails or the pool is full.
func (n *nativeDB) put(c *conn, views []string) {
	for _, v := range views {
		if err := c.exec("DROP VIEW IF EXISTS " + sqlIdent(v)); err != nil {
			c.close()
			return
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		c.close()
		return
	}
	select {
	case n.pool <- c:
	default:
		c.close()
	}
}

func (n *nativeDB) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for {
		select {
		case c := <-n.pool:
			c.close()
		default:
			duck.Close(&n.db)
			return
		}
	}
}

// exec runs a statement that returns nothing of interest.
func (c *conn) exec(sql string) error {
	var res duck.Result
	defer duck.DestroyResult(&res)
	if duck.Query(c.c, sql, &res) == duck.StateError {
		return classify(duck.ResultErrorType(&res), duck.ResultError(&res))
	}
	return nil
}

// filePlans asks each table of p for a plain file plan. It returns nil
// (and no error) when any table has none: the query then takes the
// stream path. A table with a transaction's staged writes is planned with
// them (catalogs.StagedPlanner); without a plain plan it takes the stream
// path when its backend can scan them there (catalogs.StagedScanner), and
// is an error otherwise.
func filePlans(ctx context.Context, p *plan, snapshot *int64) ([]*catalogs.FilePlan, error) {
	if len(p.refs) == 0 {
		return nil, nil
	}
	out := make([]*catalogs.FilePlan, len(p.refs))
	var fallback bool
	for i, ref := range p.refs {
		req := catalogs.ScanRequest{Columns: ref.columns, Filters: ref.filters, SnapshotID: snapshot, Limit: ref.limit}
		if st := ref.table.Staged; st != nil {
			plan, err := stagedPlan(ctx, p, ref, req, st)
			if err != nil {
				return nil, err
			}
			out[i] = plan
			fallback = fallback || plan == nil
			continue
		}
		fp, ok := ref.table.Scanner.(catalogs.FilePlanner)
		if !ok || !p.fileSafe {
			fallback = true
			continue
		}
		plan, err := fp.PlanFiles(ctx, ref.table.Ident, req)
		if err != nil {
			return nil, err
		}
		if !usable(plan) {
			fallback = true
			continue
		}
		out[i] = plan
	}
	if fallback {
		if t := unscannedStaged(p); t != nil {
			return nil, errStaged(t.Ident, "another table of the query cannot be read from its files")
		}
		return nil, nil
	}
	return out, nil
}

// stagedPlan plans a table together with a transaction's staged writes.
// The plan is nil (and the error too) when it is not usable but the
// stream path can read the table with them (catalogs.StagedScanner).
func stagedPlan(ctx context.Context, p *plan, ref *scanRef, req catalogs.ScanRequest, st *Staged) (*catalogs.FilePlan, error) {
	plan, why, err := planStaged(ctx, p, ref, req, st)
	if err != nil || why == "" {
		return plan, err
	}
	if ref.table.streamScanned() {
		return nil, nil
	}
	return nil, errStaged(ref.table.Ident, why)
}

// planStaged is stagedPlan's native plan, or why there is none.
func planStaged(ctx context.Context, p *plan, ref *scanRef, req catalogs.ScanRequest, st *Staged) (_ *catalogs.FilePlan, why string, _ error) {
	if st.Create != nil {
		return nil, "the transaction creates the table", nil
	}
	sp, ok := ref.table.Scanner.(catalogs.StagedPlanner)
	if !ok {
		return nil, "its catalog cannot plan uncommitted files", nil
	}
	if !p.fileSafe {
		return nil, "the query's text takes the stream path (DESCRIBE, SUMMARIZE or a quoted CTE name)", nil
	}
	plan, err := sp.PlanStaged(ctx, ref.table.Ident, req, st.Receipts, st.Overwrite)
	if err != nil {
		return nil, "", err
	}
	if !plan.Plain {
		return nil, plan.Reason, nil
	}
	if len(plan.Files) == 0 {
		// Nothing committed and nothing staged that holds rows, or an
		// overwrite with nothing: read the table's schema, empty.
		return plan, "", nil
	}
	if !usable(plan) {
		return nil, "its files are not under the warehouse", nil
	}
	return plan, "", nil
}

// unscannedStaged is a table of p with staged writes that only the
// native path can read (its backend is no catalogs.StagedScanner), or
// nil.
func unscannedStaged(p *plan) *Table {
	for _, r := range p.refs {
		if r.table.Staged != nil && !r.table.streamScanned() {
			return &r.table
		}
	}
	return nil
}

// errStaged reports a table whose transaction's writes a query cannot
// read: it must be committed first.
func errStaged(t catalogs.TableIdent, why string) error {
	return catalogs.Errorf(catalogs.ErrFailedPrecondition,
		"table %s has uncommitted writes in this transaction that the query cannot read (%s): commit the transaction first", t, why)
}

// usable checks a plan the engine will hand to DuckDB: plain, with files,
// all of them clean absolute paths under a root that is not "/".
func usable(fp *catalogs.FilePlan) bool {
	if fp == nil || !fp.Plain || len(fp.Files) == 0 {
		return false
	}
	root := fp.Root
	if !filepath.IsAbs(root) || filepath.Clean(root) != root || root == "/" {
		return false
	}
	for _, f := range fp.Files {
		if filepath.Clean(f) != f || !strings.HasPrefix(f, root+"/") || strings.ContainsAny(f, "*?[]{}\\\x00") {
			return false
		}
	}
	return true
}

// startNative runs the query over the planned files when every table has
// a usable plan; ok is false when it does not, and nothing was started.
func (r *Rows) startNative(ctx context.Context, p *plan, sql string, params arrow.RecordBatch) (ok bool, err error) {
	var snapshot *int64
	if r.part != nil {
		if len(p.refs) != 1 {
			return false, errInvalid("a query read in parts reads one table")
		}
		snapshot = &r.part.Snapshot
	}
	plans, err := filePlans(ctx, p, snapshot)
	if err != nil || plans == nil {
		return false, err
	}
	if r.part != nil {
		fp := *plans[0]
		if r.part.Count > len(fp.Files) {
			return false, errPartChanged(p.refs[0].table.Ident, "fewer files than parts")
		}
		fp.Files = partFiles(fp.Files, fp.FileBytes, r.part.Count, r.part.Index)
		plans[0] = &fp
	}
	// Past this point a failure falls back to the stream path, which
	// answers the query either way (a DuckDB that cannot open, a column
	// DuckDB cannot cast to its stream type, a file gone since planning).
	db, err := r.eng.natives.get(r.eng.opts, roots(plans))
	if err != nil || db == nil {
		return false, nil
	}
	views := make([]string, len(p.refs))
	for i, ref := range p.refs {
		types, err := r.conn.streamTypes(ref)
		if err != nil {
			return false, err
		}
		views[i] = fileView(ref.view, ref.columns, types, plans[i].Files)
	}
	nc, err := db.conn()
	if err != nil {
		return false, nil
	}
	names := make([]string, len(p.refs))
	for i, v := range views {
		names[i] = p.refs[i].view
		if err := nc.exec(v); err != nil {
			db.put(nc, names[:i+1])
			return false, nil
		}
	}
	// From here the query is the native connection's; Close gives it back.
	r.stop()
	r.conn.close()
	r.conn = nc
	r.stop = nc.interruptOn(ctx)
	r.native, r.views = db, names
	direct := r.startDirect(ctx, p, sql, params, plans[0])
	for i, ref := range p.refs {
		r.scans = append(r.scans, ScanStats{Table: ref.table.Ident, Columns: ref.columns, Filters: ref.filters,
			FilesPlanned: len(plans[i].Files), FilesTotal: plans[i].FilesTotal, Native: true, Direct: direct})
	}
	if direct {
		return true, nil
	}
	if err := r.run(ctx, sql, params); err != nil {
		return true, err
	}
	r.readAhead()
	return true, nil
}

// streamTypes are the DuckDB types of ref's columns on the stream path:
// those of its Arrow schema, registered as an empty stream.
func (c *conn) streamTypes(ref *scanRef) ([]string, error) {
	probe := ref.view + "_types"
	empty, err := array.NewRecordReader(projectSchema(ref.table.Schema, ref.columns), nil)
	if err != nil {
		return nil, err
	}
	release, err := registerStream(c, probe, empty)
	if err != nil {
		return nil, err
	}
	defer release()
	var res duck.Result
	defer duck.DestroyResult(&res)
	if duck.Query(c.c, "DESCRIBE SELECT * FROM "+sqlIdent(probe), &res) == duck.StateError {
		return nil, classify(duck.ResultErrorType(&res), duck.ResultError(&res))
	}
	rdr, err := newChunkReader(&res)
	if err != nil {
		return nil, err
	}
	defer rdr.release()
	byName := map[string]string{}
	for {
		rec, err := rdr.next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		names, ok1 := rec.Column(0).(*array.String)
		types, ok2 := rec.Column(1).(*array.String)
		for i := 0; ok1 && ok2 && i < names.Len(); i++ {
			byName[strings.Clone(names.Value(i))] = strings.Clone(types.Value(i))
		}
		rec.Release()
	}
	out := make([]string, len(ref.columns))
	for i, col := range ref.columns {
		if out[i] = byName[col]; out[i] == "" {
			return nil, fmt.Errorf("engine: no type for column %s of %s", col, ref.table.Ident)
		}
	}
	return out, nil
}

// roots is the sorted set of the plans' roots.
func roots(plans []*catalogs.FilePlan) []string {
	var out []string
	for _, fp := range plans {
		if !slices.Contains(out, fp.Root) {
			out = append(out, fp.Root)
		}
	}
	slices.Sort(out)
	return out
}

// fileView is the view the gateway writes for one table reference: its
// columns, cast to the types the stream path would give them (a cast to
// the type a column already has is dropped by DuckDB's binder, so
// pushdown into the files is kept), read from exactly the planned files.
func fileView(name string, cols []string, types []string, files []string) string {
	var b strings.Builder
	if len(files) == 0 {
		// No file (a transaction replaced the table with nothing): the
		// columns, with no rows.
		b.WriteString("CREATE TEMP VIEW " + sqlIdent(name) + " AS SELECT ")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "CAST(NULL AS %s) AS %s", types[i], sqlIdent(c))
		}
		if len(cols) == 0 {
			b.WriteString("NULL AS __none")
		}
		b.WriteString(" WHERE false")
		return b.String()
	}
	b.WriteString("CREATE TEMP VIEW " + sqlIdent(name) + " AS SELECT ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "CAST(%s AS %s) AS %s", sqlIdent(c), types[i], sqlIdent(c))
	}
	b.WriteString(" FROM read_parquet([")
	for i, f := range files {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(sqlString(f))
	}
	// Iceberg paths look like hive partitions (col=value/): DuckDB must not
	// make columns of them.
	b.WriteString("], hive_partitioning = false, union_by_name = false)")
	return b.String()
}

func sqlIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func sqlString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
