//go:build duckdb_arrow

package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/catalogs"
)

var debugSQL func(q, js, sql string)

// debugPrepare, set by tests, is called for each describe DuckDB
// prepares (not answered from describeCache).
var debugPrepare func()

// Describe parses and binds a query without reading any data: its tables
// are registered as empty streams of their schemas.
func (e *Engine) Describe(ctx context.Context, query string, resolve Resolver) (*Description, error) {
	d, _, err := e.DescribeSplit(ctx, query, resolve, SplitOptions{})
	return d, err
}

// DescribeSplit is Describe and Split (without parameters) at once, with
// one plan of the query. A query that cannot be split, or whose split
// fails, has no parts: it is read whole.
func (e *Engine) DescribeSplit(ctx context.Context, query string, resolve Resolver, opts SplitOptions) (*Description, []Part, error) {
	var p *plan
	d, parts, err := e.describeSplit(ctx, query, resolve, opts, &p)
	return d, parts, e.publicErr(p, err)
}

// describeSplit is DescribeSplit; *pp is set to the plan once made, so
// that errors can name the tables as written.
func (e *Engine) describeSplit(ctx context.Context, query string, resolve Resolver, opts SplitOptions, pp **plan) (*Description, []Part, error) {
	c, err := e.connect()
	if err != nil {
		return nil, nil, err
	}
	defer c.close()
	stop := c.interruptOn(ctx)
	defer stop()
	p, err := c.planTree(query, resolve, e.pol)
	if err != nil {
		return nil, nil, ctxErr(ctx, err)
	}
	*pp = p
	key := describeKey(p)
	if kept, ok := e.descs.get(key); ok {
		// Neither the rewritten SQL nor a split is needed: a kept
		// describe's tables are not read from files (describeKey).
		d := &Description{Schema: kept.schema, Params: kept.params}
		d.Origins = resultOrigins(p, d.Schema)
		if _, q, ok := pushable(p.text, p); ok && d.Params.NumFields() == 0 {
			q.Schema = d.Schema
			d.Pushed = &q
		}
		return d, nil, nil
	}
	sql, err := c.rewrite(p)
	if err != nil {
		return nil, nil, ctxErr(ctx, err)
	}
	if debugPrepare != nil {
		debugPrepare()
	}
	release, err := c.registerEmpty(p)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	var st duck.PreparedStatement
	defer duck.DestroyPrepare(&st)
	if duck.Prepare(c.c, sql, &st) == duck.StateError {
		return nil, nil, ctxErr(ctx, classifyMessage(duck.PrepareError(st)))
	}
	d, err := describe(c, st)
	if err != nil {
		return nil, nil, err
	}
	// Kept as the client is shown it: DuckDB names computed columns
	// after the rewritten text, whose private view names differ in every
	// plan.
	d.Schema = e.publicNames(p, d.Schema)
	e.descs.put(key, describedTypes{schema: d.Schema, params: d.Params})
	d.Origins = resultOrigins(p, d.Schema)
	if d.Params.NumFields() == 0 {
		if _, q, ok := pushable(p.text, p); ok {
			q.Schema = d.Schema
			d.Pushed = &q
		}
	}
	if opts.MaxParts < 2 || d.Params.NumFields() > 0 {
		return d, nil, nil
	}
	parts, err := c.split(ctx, p, sql, nil, opts)
	if err != nil {
		return d, nil, nil
	}
	return d, parts, nil
}

// registerEmpty registers p's tables as empty streams of their schemas;
// release unregisters them.
func (c *conn) registerEmpty(p *plan) (release func(), err error) {
	var releases []func()
	release = func() {
		for _, rel := range releases {
			rel()
		}
	}
	for _, r := range p.refs {
		empty, err := array.NewRecordReader(projectSchema(r.table.Schema, r.columns), nil)
		if err != nil {
			release()
			return nil, err
		}
		rel, err := registerStream(c, r.view, empty)
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, rel)
	}
	return release, nil
}

// describe reads a prepared statement's result and parameter schemas.
func describe(c *conn, st duck.PreparedStatement) (*Description, error) {
	var opts duck.ArrowOptions
	duck.ConnectionGetArrowOptions(c.c, &opts)
	defer duck.DestroyArrowOptions(&opts)
	n := duck.PreparedStatementColumnCount(st)
	names := make([]string, n)
	types := make([]duck.LogicalType, n)
	for i := range n {
		names[i] = duck.PreparedStatementColumnName(st, i)
		types[i] = duck.PreparedStatementColumnLogicalType(st, i)
	}
	defer destroyTypes(types)
	schema, ed := duck.NewArrowSchema(opts, types, names)
	if err := errorData(ed); err != nil {
		if untyped := untypedParams(st); len(untyped) > 0 {
			return nil, errUntyped(untyped)
		}
		return nil, fmt.Errorf("engine: result schema: %w", err)
	}
	var params []arrow.Field
	for i := range duck.NParams(st) {
		name := fmt.Sprintf("$%d", i+1)
		dt := arrow.DataType(arrow.BinaryTypes.String) // a parameter DuckDB cannot type
		lt := duck.ParamLogicalType(st, i+1)
		if lt.Ptr != nil {
			if s, ed := duck.NewArrowSchema(opts, []duck.LogicalType{lt}, []string{name}); errorData(ed) == nil && s.NumFields() == 1 {
				dt = s.Field(0).Type
			}
			duck.DestroyLogicalType(&lt)
		}
		params = append(params, arrow.Field{Name: name, Type: dt, Nullable: true})
	}
	return &Description{Schema: schema, Params: arrow.NewSchema(params, nil)}, nil
}

// untypedParams are the parameters ($1 is 1) of st whose type DuckDB
// could not infer.
func untypedParams(st duck.PreparedStatement) []int {
	var out []int
	for i := range duck.NParams(st) {
		if t := duck.ParamType(st, i+1); t == duck.TypeInvalid || t == duck.TypeAny || t == duck.TypeSQLNull {
			out = append(out, int(i)+1)
		}
	}
	return out
}

// errUntyped refuses a query with parameters of unknown type (SELECT ?
// + 1), which DuckDB cannot describe, naming them and how to type them.
func errUntyped(params []int) error {
	names := make([]string, len(params))
	for i, n := range params {
		names[i] = fmt.Sprintf("$%d (placeholder %d)", n, n)
	}
	return errInvalid("the type of parameter %s cannot be inferred from the query: "+
		"give it a type, e.g. CAST(? AS BIGINT) or ?::VARCHAR (docs/sql.md, \"Parameter types\")", strings.Join(names, ", "))
}

func destroyTypes(types []duck.LogicalType) {
	for i := range types {
		duck.DestroyLogicalType(&types[i])
	}
}

// plan parses query with DuckDB's parser, resolves and rewrites its table
// references, and returns the SQL to run.
func (c *conn) plan(query string, resolve Resolver, pol *policy) (*plan, string, error) {
	p, err := c.planTree(query, resolve, pol)
	if err != nil {
		return nil, "", err
	}
	sql, err := c.rewrite(p)
	if err != nil {
		return nil, "", err
	}
	return p, sql, nil
}

// planTree parses query and resolves its table references: plan without
// the SQL, which a describe answered from describeCache does not need.
func (c *conn) planTree(query string, resolve Resolver, pol *policy) (*plan, error) {
	// DuckDB's parser stops at a NUL byte, so the text after one would be
	// checked by no one: a backend that runs the query whole gets the
	// client's text, tail included.
	if i := strings.IndexByte(query, 0); i >= 0 {
		return nil, errInvalid("the query holds a NUL byte at offset %d", i)
	}
	tree, err := c.parse(query)
	if err != nil {
		// A reserved word starting a dotted name (default.people):
		// qualifiers.go.
		quoted, ok := quoteQualifiers(query, pol.reserved)
		if !ok || !errors.Is(err, catalogs.ErrInvalidArgument) {
			return nil, err
		}
		t, qerr := c.parse(quoted)
		if qerr != nil {
			return nil, err
		}
		tree, query = t, quoted
	}
	prefix := privatePrefix + randomHex(8) + "_"
	p, err := newPlan(tree, resolve, func(i int) string { return fmt.Sprintf("%s%d", prefix, i) }, pol)
	if err != nil {
		return nil, err
	}
	p.text = query
	return p, nil
}

// rewrite is the SQL of p's rewritten tree (its tables as their private
// views), printed by DuckDB.
func (c *conn) rewrite(p *plan) (string, error) {
	rewritten, err := p.marshal()
	if err != nil {
		return "", err
	}
	sql, err := c.queryString("SELECT json_deserialize_sql($1::VARCHAR::JSON)", rewritten)
	if err != nil {
		return "", fmt.Errorf("engine: rewrite: %w", err)
	}
	if debugSQL != nil {
		debugSQL(p.text, rewritten, sql)
	}
	return sql, nil
}

// parse is DuckDB's parse tree of query, or why it refuses it.
// A tree is decoded afresh from the cached JSON for every plan, which
// rewrites it in place.
func (c *conn) parse(query string) (map[string]any, error) {
	if js, ok := c.parses.get(query); ok {
		return decodeParse(query, js)
	}
	js, err := c.queryString("SELECT json_serialize_sql($1::VARCHAR)::VARCHAR", query)
	if err != nil {
		return nil, err
	}
	tree, err := decodeParse(query, js)
	if err == nil {
		c.parses.put(query, js)
	}
	return tree, err
}

// Query runs a query and streams its result. params holds the parameter
// values in its first row (nil for none). The caller must Close the rows.
func (e *Engine) Query(ctx context.Context, query string, params arrow.RecordBatch, resolve Resolver) (*Rows, error) {
	c, err := e.connect()
	if err != nil {
		return nil, err
	}
	r := &Rows{eng: e, conn: c}
	if err := r.start(ctx, query, params, resolve); err != nil {
		r.Close()
		return nil, e.publicErr(r.plan, err)
	}
	return r, nil
}

// Rows is a streaming query result. It is not safe for concurrent use.
type Rows struct {
	eng      *Engine
	conn     *conn
	st       duck.PreparedStatement
	res      duck.Result
	hasRes   bool
	rdr      *chunkReader
	fast     *fastBatcher // nil when a column needs DuckDB's conversion
	plan     *plan
	part     *Part // the part of a split query it reads (split.go); nil for all
	cur      arrow.RecordBatch
	err      error
	stop     func()
	releases []func()
	scans    []ScanStats
	ahead    *ahead             // reads the next batch while the caller sends this one
	native   *nativeDB          // the pool conn returns to, on the native path
	pushed   array.RecordReader // the backend's result, when it ran the query whole (pushquery.go)
	direct   *directScan        // the files' reader, on the direct path (direct.go)
	views    []string           // the views of conn to drop then
	origins  []Origin           // the result's origins when there is no plan (QueryPushed)
	once     sync.Once
}

func (r *Rows) start(ctx context.Context, query string, params arrow.RecordBatch, resolve Resolver) error {
	c := r.conn
	// From the parse on: DuckDB folds constant expressions while it
	// prepares, which can be as long as running them.
	r.stop = c.interruptOn(ctx)
	p, sql, err := c.plan(query, resolve, r.eng.pol)
	if err != nil {
		return ctxErr(ctx, err)
	}
	r.plan = p
	if ok, err := r.startPushed(ctx, query, p, sql, params); ok || err != nil {
		return err
	}
	if ok, err := r.startNative(ctx, p, sql, params); ok || err != nil {
		return err
	}
	if t := unscannedStaged(p); t != nil {
		return errStaged(t.Ident, "its files could not be opened")
	}
	if r.part != nil {
		t := catalogs.TableIdent{}
		if len(p.refs) > 0 {
			t = p.refs[0].table.Ident
		}
		return errPartChanged(t, "its files can no longer be read as they are")
	}
	for _, ref := range p.refs {
		req := catalogs.ScanRequest{Columns: ref.columns, Filters: ref.filters, Limit: ref.limit}
		res, err := scan(ctx, ref, req)
		if err != nil {
			return err
		}
		r.scans = append(r.scans, ScanStats{Table: ref.table.Ident, Columns: ref.columns, Filters: ref.filters,
			FilesPlanned: res.FilesPlanned, FilesTotal: res.FilesTotal})
		release, err := registerStream(c, ref.view, newPrefetchReader(res.Reader))
		if err != nil {
			return err
		}
		r.releases = append(r.releases, release)
	}
	return r.run(ctx, sql, params)
}

// scan reads a table on the stream path: with the transaction's staged
// writes when it has any, its committed data otherwise.
func scan(ctx context.Context, ref *scanRef, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	if st := ref.table.Staged; st != nil && st.Create != nil {
		cs, ok := ref.table.Scanner.(catalogs.CreateScanner)
		if !ok {
			return nil, errStaged(ref.table.Ident, "its catalog cannot scan a table being created")
		}
		return cs.ScanCreate(ctx, ref.table.Ident, st.Create.Schema, st.Create.Opts, req, st.Receipts)
	}
	if st := ref.table.Staged; st != nil {
		ss, ok := ref.table.Scanner.(catalogs.StagedScanner)
		if !ok {
			return nil, errStaged(ref.table.Ident, "its catalog cannot scan uncommitted files")
		}
		return ss.ScanStaged(ctx, ref.table.Ident, req, st.Receipts, st.Overwrite)
	}
	return ref.table.Scanner.Scan(ctx, ref.table.Ident, req)
}

// run prepares and starts sql, as a streaming result, on the query's
// connection, whose tables are registered.
func (r *Rows) run(ctx context.Context, sql string, params arrow.RecordBatch) error {
	c := r.conn
	if duck.Prepare(c.c, sql, &r.st) == duck.StateError {
		return ctxErr(ctx, classifyMessage(duck.PrepareError(r.st)))
	}
	if err := bindParams(r.st, params); err != nil {
		return err
	}
	var pending duck.PendingResult
	if duck.PendingPreparedStreaming(r.st, &pending) == duck.StateError {
		err := classifyMessage(duck.PendingError(pending))
		duck.DestroyPending(&pending)
		return ctxErr(ctx, err)
	}
	defer duck.DestroyPending(&pending)
	state := duck.ExecutePending(pending, &r.res)
	r.hasRes = true
	if r.native == nil {
		// The query is bound and started: its streams' views are no
		// longer needed, and no other connection may see them
		// (cstream.go). Another connection drops them: a statement on
		// this one would close the streaming result.
		r.eng.dropViews(r.plan)
	}
	if state == duck.StateError {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return classify(duck.ResultErrorType(&r.res), duck.ResultError(&r.res))
	}
	rdr, err := newChunkReader(&r.res)
	if err != nil {
		return err
	}
	rdr.schema = r.eng.publicNames(r.plan, rdr.schema)
	r.rdr = rdr
	if fastBatches {
		r.fast = newFastBatcher(unzeroed{r.eng.pool}, rdr.schema, rdr.types)
	}
	return nil
}

// Schema is the result schema.
func (r *Rows) Schema() *arrow.Schema {
	if r.pushed != nil {
		return r.pushed.Schema()
	}
	if r.direct != nil {
		return r.direct.schema
	}
	return r.rdr.schema
}

// Origins are the origins of the result's columns (Description.Origins).
func (r *Rows) Origins() []Origin {
	if r.plan == nil {
		return r.origins // QueryPushed's: there is no plan
	}
	return resultOrigins(r.plan, r.Schema())
}

// resultOrigins are p's origins when they match s's columns, else nil.
func resultOrigins(p *plan, s *arrow.Schema) []Origin {
	if p == nil {
		return nil
	}
	o := p.origins()
	if len(o) != s.NumFields() {
		return nil
	}
	return o
}

// batchRows is the size Rows gathers DuckDB's chunks (2048 rows each)
// into: fewer, larger batches cost far less to send through Flight.
const batchRows = 64 * 1024

// Next advances to the next batch; false at the end or on error.
func (r *Rows) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.pushed != nil {
		return r.nextPushed()
	}
	if r.direct != nil && r.err == nil {
		r.cur, r.err = r.direct.nextBatch()
		return r.cur != nil && r.err == nil
	}
	if r.err != nil || r.rdr == nil {
		return false
	}
	var rec arrow.RecordBatch
	if r.ahead != nil {
		b, ok := <-r.ahead.batches
		if !ok {
			return false
		}
		rec, r.err = b.rec, b.err
	} else {
		rec, r.err = r.gather()
	}
	r.cur = rec
	return rec != nil && r.err == nil
}

// gather reads up to batchRows rows of the result into one batch; nil at
// the end.
func (r *Rows) gather() (arrow.RecordBatch, error) {
	if r.fast != nil {
		return r.gatherFast()
	}
	var parts []arrow.RecordBatch
	var n int64
	for n < batchRows {
		rec, err := r.rdr.next()
		if err != nil {
			for _, p := range parts {
				p.Release()
			}
			return nil, err
		}
		if rec == nil {
			break
		}
		parts = append(parts, rec)
		n += rec.NumRows()
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return concat(r.eng.pool, r.rdr.schema, parts)
}

// gatherFast gathers the next batch straight from DuckDB's vectors.
func (r *Rows) gatherFast() (arrow.RecordBatch, error) {
	for r.fast.room(vectorSize) {
		chunk, ok, err := r.rdr.fetch()
		if err != nil {
			r.fast.release()
			return nil, err
		}
		if !ok {
			break
		}
		err = r.fast.append(chunk, int(duck.DataChunkGetSize(chunk)))
		duck.DestroyDataChunk(&chunk)
		if err != nil {
			r.fast.release()
			return nil, err
		}
	}
	return r.fast.finish(), nil
}

// fastBatches turns the fast path on; tests turn it off to compare.
var fastBatches = true

// vectorSize is the most rows a DuckDB chunk holds.
var vectorSize = int(duck.VectorSize())

// concat joins batches into one, in buffers from mem (the batches are
// released).
func concat(mem memory.Allocator, schema *arrow.Schema, parts []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(parts) == 1 {
		return parts[0], nil
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	for i := range cols {
		chunks := make([]arrow.Array, len(parts))
		for j, p := range parts {
			chunks[j] = p.Column(i)
		}
		c, err := array.Concatenate(chunks, mem)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, fmt.Errorf("engine: result batch: %w", err)
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// RecordBatch is the current batch, valid until the next call to Next.
func (r *Rows) RecordBatch() arrow.RecordBatch { return r.cur }

// Err is the error that ended the stream, if any.
func (r *Rows) Err() error { return r.eng.publicErr(r.plan, r.err) }

// Scans reports the table scans of the query.
func (r *Rows) Scans() []ScanStats { return r.scans }

// Close stops the query and frees everything it holds. It is safe to call
// more than once.
func (r *Rows) Close() {
	r.once.Do(func() {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		r.ahead.stop()
		r.direct.stop()
		if r.pushed != nil {
			r.pushed.Release()
		}
		if r.fast != nil {
			r.fast.release()
		}
		if r.stop != nil {
			r.stop()
		}
		if r.rdr != nil {
			r.rdr.release()
		}
		if r.hasRes {
			duck.DestroyResult(&r.res)
		}
		duck.DestroyPrepare(&r.st)
		for _, rel := range r.releases {
			rel()
		}
		if r.native != nil {
			r.native.put(r.conn, r.views)
			return
		}
		if r.conn != nil { // QueryPushed's Rows have none
			r.conn.close()
		}
	})
}

// projectSchema keeps the named columns of s, in s's order.
func projectSchema(s *arrow.Schema, cols []string) *arrow.Schema {
	var fields []arrow.Field
	for _, f := range s.Fields() {
		if included(cols, f.Name) {
			fields = append(fields, f)
		}
	}
	return arrow.NewSchema(fields, nil)
}

// classifyMessage classifies an error known only by its message, whose
// prefix names DuckDB's error type ("Binder Error: ...").
func classifyMessage(msg string) error {
	prefixes := []struct {
		p string
		t duck.ErrorType
	}{
		{"Parser Error", duck.ErrorTypeParser}, {"Syntax Error", duck.ErrorTypeSyntax},
		{"Binder Error", duck.ErrorTypeBinder}, {"Catalog Error", duck.ErrorTypeCatalog},
		{"Conversion Error", duck.ErrorTypeConversion}, {"Invalid Input Error", duck.ErrorTypeInvalidInput},
		{"Permission Error", duck.ErrorTypePermission}, {"Not implemented Error", duck.ErrorTypeNotImplemented},
		{"Out of Memory Error", duck.ErrorTypeOutOfMemory}, {"INTERRUPT Error", duck.ErrorTypeInterrupt},
		{"Type Error", duck.ErrorTypeMismatchType}, {"Out of Range Error", duck.ErrorTypeOutOfRange},
	}
	for _, p := range prefixes {
		if strings.HasPrefix(msg, p.p) {
			return classify(p.t, msg)
		}
	}
	return classify(duck.ErrorTypeInvalid, msg)
}

// ctxErr is ctx's error when ctx has ended (DuckDB was interrupted
// because of it), else err.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
