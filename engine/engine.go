//go:build duckdb_arrow

package engine

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	duck "github.com/duckdb/duckdb-go-bindings"

	"github.com/flightgw/flightgw/catalogs"
)

// Engine is an embedded, locked-down DuckDB. It is safe for concurrent
// use: every query runs on a connection of its own.
type Engine struct {
	db      duck.Database
	opts    Options
	natives natives     // DuckDBs that read planned Parquet files (native.go)
	pool    *bufferPool // the buffers of result batches (pool.go)
	// keywords are DuckDB's keywords, which it quotes when it prints a
	// name (names.go).
	keywords map[string]bool
	pol      *policy // what queries may not name or must bound (policy.go)
	parses   *parseCache
	descs    *describeCache // pushed queries' result types (describecache.go)
}

// setting is one DuckDB configuration option.
type setting struct{ name, value string }

// lockdown is the configuration DuckDB opens with, in order: resources
// first (a temp directory cannot be set once external access is off),
// then the lock-down, and lock_configuration last, after which nothing a
// query says can change any of it.
func lockdown(opts Options) []setting {
	return append(resources(opts),
		// DuckDB's arrow_scan hands the pushed-down projection and filters
		// to the stream's producer and trusts it to apply them; through
		// the C API the producer ignores them, so a pruned column would be
		// read from the wrong child and a pushed filter would be lost. So
		// no optimizer may narrow the scan: the stream already carries
		// only the columns the query names, and the gateway pushes the
		// filters into the catalog scan itself (see pushdown.go).
		setting{"disabled_optimizers", "filter_pushdown,join_filter_pushdown,unused_columns,late_materialization"},
		setting{"autoinstall_known_extensions", "false"},
		setting{"autoload_known_extensions", "false"},
		setting{"allow_community_extensions", "false"},
		setting{"allow_unsigned_extensions", "false"},
		setting{"enable_external_access", "false"},
		setting{"lock_configuration", "true"},
	)
}

// resources are the memory, spill and thread settings from Options.
func resources(opts Options) []setting {
	var s []setting
	if opts.MemoryLimit != "" {
		s = append(s, setting{"memory_limit", opts.MemoryLimit})
	}
	if opts.TempDir != "" {
		s = append(s, setting{"temp_directory", opts.TempDir})
	} else {
		// DuckDB would otherwise spill into .tmp under the working
		// directory. max_temp_directory_size 0B alone is not enough:
		// DuckDB 1.5 reports it but its buffer manager does not apply
		// the value given at open (engine/spill_test.go), so the
		// directory is unset as well.
		s = append(s, setting{"temp_directory", ""}, setting{"max_temp_directory_size", "0B"})
	}
	if opts.Threads > 0 {
		s = append(s, setting{"threads", fmt.Sprint(opts.Threads)})
	}
	return s
}

// New opens an in-memory DuckDB with the lock-down applied.
func New(opts Options) (*Engine, error) {
	if opts.TempDir != "" {
		if err := os.MkdirAll(opts.TempDir, 0o700); err != nil {
			return nil, fmt.Errorf("engine: temp_dir %s: %w", opts.TempDir, err)
		}
	}
	e := &Engine{opts: opts, pool: newBufferPool(defaultPoolBytes), parses: newParseCache(maxParseBytes, maxParseEntry),
		descs: newDescribeCache()}
	if err := open(&e.db, lockdown(opts)); err != nil {
		return nil, err
	}
	kw, err := e.loadKeywords()
	if err != nil {
		duck.Close(&e.db)
		return nil, err
	}
	e.keywords = kw
	if e.pol, err = e.loadPolicy(); err != nil {
		duck.Close(&e.db)
		return nil, err
	}
	return e, nil
}

// loadPolicy reads from DuckDB the names policy refuses and the engine's
// memory limit, which bounds guarded functions.
func (e *Engine) loadPolicy() (*policy, error) {
	c, err := e.connect()
	if err != nil {
		return nil, err
	}
	defer c.close()
	pol := &policy{}
	for _, q := range []struct {
		set *map[string]bool
		sql string
	}{
		{&pol.systemViews, `SELECT string_agg(DISTINCT view_name, ' ') FROM duckdb_views()
			WHERE internal AND schema_name IN ('main', 'pg_catalog') AND $1 <> ''`},
		{&pol.catalogMacros, `SELECT string_agg(DISTINCT function_name, ' ') FROM duckdb_functions()
			WHERE function_type = 'macro' AND $1 <> '' AND regexp_matches(macro_definition,
			'duckdb_[a-z_]+\s*\(|sqlite_|information_schema|pg_catalog\.')`},
		{&pol.serverMacros, `SELECT string_agg(DISTINCT function_name, ' ') FROM duckdb_functions()
			WHERE function_type IN ('macro', 'table_macro') AND regexp_matches(macro_definition, $1)`},
		{&pol.volatile, `SELECT string_agg(DISTINCT function_name, ' ') FROM duckdb_functions()
			WHERE stability = 'VOLATILE' AND $1 <> ''`},
		{&pol.reserved, `SELECT string_agg(keyword_name, ' ') FROM duckdb_keywords()
			WHERE keyword_category IN ('reserved', 'type_function') AND $1 <> ''`},
	} {
		arg := "x"
		if q.set == &pol.serverMacros {
			arg = `\b(` + strings.Join(slices.Sorted(maps.Keys(serverFunctions)), "|") + `)\s*\(`
		}
		list, err := c.queryString(q.sql, arg)
		if err != nil {
			return nil, fmt.Errorf("engine: policy: %w", err)
		}
		*q.set = map[string]bool{}
		for _, n := range strings.Fields(list) {
			(*q.set)[strings.ToLower(n)] = true
		}
	}
	limit, err := c.queryString(`SELECT current_setting('memory_limit')::VARCHAR WHERE $1 <> ''`, "x")
	if err != nil {
		return nil, fmt.Errorf("engine: policy: %w", err)
	}
	n, err := parseBytes(limit)
	if err != nil {
		return nil, fmt.Errorf("engine: memory_limit %q: %w", limit, err)
	}
	pol.maxString = max(n/maxStringDivisor, 4<<10)
	pol.guards = map[string]guard{}
	for name, forms := range guardSQL {
		for nargs, g := range forms {
			js, err := c.queryString("SELECT json_serialize_sql($1::VARCHAR)::VARCHAR", "SELECT "+g.size)
			if err != nil {
				return nil, fmt.Errorf("engine: guard of %s: %w", name, err)
			}
			tree, err := decodeParse("SELECT", js)
			if err != nil {
				return nil, fmt.Errorf("engine: guard of %s: %w", name, err)
			}
			node, _ := tree["node"].(map[string]any)
			sel := anyList(node["select_list"])
			if len(sel) != 1 {
				return nil, fmt.Errorf("engine: guard of %s: no expression", name)
			}
			size, _ := sel[0].(map[string]any)
			pol.guards[guardKey(name, nargs)] = guard{arg: g.arg, size: size}
		}
	}
	return pol, nil
}

// open opens an in-memory DuckDB with the given configuration.
func open(db *duck.Database, settings []setting) error {
	var cfg duck.Config
	if duck.CreateConfig(&cfg) == duck.StateError {
		return fmt.Errorf("engine: cannot create a duckdb config")
	}
	defer duck.DestroyConfig(&cfg)
	for _, st := range settings {
		if duck.SetConfig(cfg, st.name, st.value) == duck.StateError {
			return fmt.Errorf("engine: duckdb option %s=%q rejected", st.name, st.value)
		}
	}
	var msg string
	if duck.OpenExt("", db, cfg, &msg) == duck.StateError {
		return fmt.Errorf("engine: open duckdb: %s", msg)
	}
	return nil
}

// Close closes DuckDB. Queries still running fail.
func (e *Engine) Close() error {
	e.natives.close()
	duck.Close(&e.db)
	return nil
}

// conn is one DuckDB connection, owned by one query.
type conn struct {
	c      duck.Connection
	parses *parseCache // the engine's; nil on a native reader's connection
}

func (e *Engine) connect() (*conn, error) {
	c, err := connect(e.db)
	if err != nil {
		return nil, err
	}
	c.parses = e.parses
	return c, nil
}

func connect(db duck.Database) (*conn, error) {
	var c duck.Connection
	if duck.Connect(db, &c) == duck.StateError {
		return nil, fmt.Errorf("engine: cannot connect to duckdb")
	}
	return &conn{c: c}, nil
}

func (c *conn) close() { duck.Disconnect(&c.c) }

// interruptOn interrupts the connection's statements once ctx ends,
// until the returned stop is called (which must happen before the
// connection closes). DuckDB forgets an interrupt when its next statement
// begins, and a statement may still be starting when ctx ends, so the
// interrupt is repeated until stop.
func (c *conn) interruptOn(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		tick := time.NewTicker(interruptEvery)
		defer tick.Stop()
		for {
			duck.Interrupt(c.c)
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// interruptEvery is how often an ended context's connection is
// interrupted again.
const interruptEvery = 20 * time.Millisecond

// queryString runs a one-row, one-VARCHAR-column statement with one
// VARCHAR parameter and returns the value.
func (c *conn) queryString(query, arg string) (string, error) {
	var st duck.PreparedStatement
	defer duck.DestroyPrepare(&st)
	if duck.Prepare(c.c, query, &st) == duck.StateError {
		return "", fmt.Errorf("engine: %s", duck.PrepareError(st))
	}
	if duck.BindVarchar(st, 1, arg) == duck.StateError {
		return "", fmt.Errorf("engine: bind: %s", duck.PrepareError(st))
	}
	var res duck.Result
	defer duck.DestroyResult(&res)
	if duck.ExecutePrepared(st, &res) == duck.StateError {
		return "", classify(duck.ResultErrorType(&res), duck.ResultError(&res))
	}
	rdr, err := newChunkReader(&res)
	if err != nil {
		return "", err
	}
	defer rdr.release()
	rec, err := rdr.next()
	if err != nil {
		return "", err
	}
	if rec == nil || rec.NumRows() == 0 || rec.NumCols() == 0 {
		return "", fmt.Errorf("engine: %s returned no row", query)
	}
	defer rec.Release()
	col, ok := rec.Column(0).(*array.String)
	if !ok {
		return "", fmt.Errorf("engine: %s returned %s, not VARCHAR", query, rec.Column(0).DataType())
	}
	return strings.Clone(col.Value(0)), nil // the buffer is freed with rec
}

// classify turns a DuckDB error into an error of a catalogs kind.
func classify(t duck.ErrorType, msg string) error {
	if strings.Contains(msg, stringBoundMarker) {
		return fmt.Errorf("%w: %s", ErrResourceExhausted, msg)
	}
	if strings.Contains(msg, "unsuccessful or closed pending query result") {
		// A DuckDB worker failed while the result streamed, and the fetch
		// found the query already closed: DuckDB has dropped the cause,
		// which is no fault of the caller's (not InvalidArgument).
		return fmt.Errorf("engine: the query failed while its result streamed and DuckDB did not keep the cause "+
			"(seen when a query outgrows engine.memory_limit): %s", msg)
	}
	switch t {
	case duck.ErrorTypeParser, duck.ErrorTypeSyntax, duck.ErrorTypeBinder, duck.ErrorTypeConversion,
		duck.ErrorTypeMismatchType, duck.ErrorTypeInvalidInput, duck.ErrorTypeOutOfRange, duck.ErrorTypeCatalog,
		duck.ErrorTypeDivideByZero, duck.ErrorTypeParameterNotResolved, duck.ErrorTypeParameterNotAllowed,
		duck.ErrorTypeInvalidType, duck.ErrorTypeDecimal, duck.ErrorTypeConstraint, duck.ErrorTypeExpression,
		duck.ErrorTypeInvalid:
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "%s", msg)
	case duck.ErrorTypePermission, duck.ErrorTypeMissingExtension, duck.ErrorTypeAutoload, duck.ErrorTypeSettings:
		return catalogs.Errorf(catalogs.ErrPermissionDenied, "%s", msg)
	case duck.ErrorTypeNotImplemented:
		return errUnsupported("%s", msg)
	case duck.ErrorTypeOutOfMemory:
		return fmt.Errorf("%w: %s (raise engine.memory_limit or set engine.temp_dir to spill)", ErrResourceExhausted, msg)
	case duck.ErrorTypeInterrupt:
		return fmt.Errorf("%w: %s", context.Canceled, msg)
	}
	if strings.Contains(msg, "Out of Memory") {
		return fmt.Errorf("%w: %s (raise engine.memory_limit or set engine.temp_dir to spill)", ErrResourceExhausted, msg)
	}
	return fmt.Errorf("engine: %s", msg)
}

// chunkReader converts a DuckDB result to Arrow one chunk at a time.
type chunkReader struct {
	done   bool // the result has ended: DuckDB errors on a fetch past it
	res    *duck.Result
	opts   duck.ArrowOptions
	schema *arrow.Schema
	types  []duck.Type // DuckDB's type of each column
}

func newChunkReader(res *duck.Result) (*chunkReader, error) {
	opts := duck.ResultGetArrowOptions(res)
	n := duck.ColumnCount(res)
	names := make([]string, n)
	types := make([]duck.LogicalType, n)
	ids := make([]duck.Type, n)
	for i := range n {
		names[i] = duck.ColumnName(res, i)
		types[i] = duck.ColumnLogicalType(res, i)
		ids[i] = duck.ColumnType(res, i)
	}
	defer func() {
		for i := range types {
			duck.DestroyLogicalType(&types[i])
		}
	}()
	schema, ed := duck.NewArrowSchema(opts, types, names)
	if err := errorData(ed); err != nil {
		duck.DestroyArrowOptions(&opts)
		return nil, fmt.Errorf("engine: result schema: %w", err)
	}
	return &chunkReader{res: res, opts: opts, schema: schema, types: ids}, nil
}

// fetch returns the next chunk of the result, which the caller destroys;
// ok is false at the end.
func (r *chunkReader) fetch() (chunk duck.DataChunk, ok bool, err error) {
	if r.done {
		return chunk, false, nil
	}
	chunk = duck.FetchChunk(*r.res)
	if chunk.Ptr == nil {
		r.done = true
		if msg := duck.ResultError(r.res); msg != "" {
			return chunk, false, classify(duck.ResultErrorType(r.res), msg)
		}
		return chunk, false, nil
	}
	return chunk, true, nil
}

// next returns the next batch, or nil at the end.
func (r *chunkReader) next() (arrow.RecordBatch, error) {
	chunk, ok, err := r.fetch()
	if !ok {
		return nil, err
	}
	defer duck.DestroyDataChunk(&chunk)
	rec, ed := duck.DataChunkToArrowArray(r.opts, r.schema, chunk)
	if err := errorData(ed); err != nil {
		return nil, fmt.Errorf("engine: result batch: %w", err)
	}
	return rec, nil
}

func (r *chunkReader) release() { duck.DestroyArrowOptions(&r.opts) }

func errorData(ed duck.ErrorData) error {
	if ed.Ptr == nil {
		return nil
	}
	defer duck.DestroyErrorData(&ed)
	if !duck.ErrorDataHasError(ed) {
		return nil
	}
	return classify(duck.ErrorDataErrorType(ed), duck.ErrorDataMessage(ed))
}
