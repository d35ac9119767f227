package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/engine"
	"github.com/flightgw/flightgw/internal/recovered"
	"github.com/flightgw/flightgw/txn"
)

// sqlState is the Handler's state for SQL: the ticket key, running
// queries, prepared statements and session options. Its zero value is
// ready to use.
type sqlState struct {
	keyOnce sync.Once
	key     []byte

	mu sync.Mutex
	// running maps a query id to the cancel of its DoGet.
	running map[string]context.CancelFunc
	// cancelled holds query ids cancelled before or while running, until
	// their tickets expire.
	cancelled map[string]time.Time
	prepared  map[string]*prepared
	sessions  sessionIndex
	// infoIDs are the standard GetSqlInfo ids registered (set by New).
	infoIDs []uint32
}

// sqlEngine returns the configured engine, or Unimplemented naming the
// build tag: the server leaves Engine nil only in a build without it.
func (h *Handler) sqlEngine() (*engine.Engine, error) {
	if h.opts.Engine == nil {
		return nil, status.Error(codes.Unimplemented, engine.ErrNoEngine.Error())
	}
	return h.opts.Engine, nil
}

// queryStatus maps an engine error to a gRPC status.
func queryStatus(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrUnsupported), errors.Is(err, engine.ErrNoEngine):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, engine.ErrResourceExhausted):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return Status(err)
}

// resolver resolves table names of a query for principal p, with the
// given default catalog and schema, ignoring case when no name has the
// exact case written (resolve.go). A catalog of another realm, or one
// whose backend cannot scan, has no tables for the query.
func (h *Handler) resolver(ctx context.Context, p auth.Principal, defCatalog, defSchema string) engine.Resolver {
	return func(cat, schema, name string) (engine.Table, error) {
		written := name
		if schema != "" {
			written = schema + "." + name
		}
		if cat != "" {
			written = cat + "." + written
		}
		if strings.EqualFold(schema, engine.InfoSchema) {
			return h.infoTable(p, cat, name, written)
		}
		if cat == "" {
			cat = defCatalog
		}
		if schema == "" {
			schema = defSchema
		}
		c, ok, err := h.findCatalog(p, cat)
		if err != nil {
			return engine.Table{}, err
		}
		if !ok {
			return engine.Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", written)
		}
		sc, ok := c.Provider.(catalogs.Scanner)
		if !ok {
			return engine.Table{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: catalog %q (%s) cannot be queried", written, c.Name, c.Type)
		}
		ident, spec, err := h.findTable(ctx, c, schema, name, written)
		if errors.Is(err, catalogs.ErrNotFound) {
			if t, ok, cerr := creating(ctx, c.Name, c.Provider, sc, schema, name); ok || cerr != nil {
				return t, cerr
			}
		}
		if err != nil {
			return engine.Table{}, err
		}
		t := engine.Table{Ident: ident, Scanner: sc, Schema: spec.Schema}
		if tx := queryTxn(ctx); tx != nil {
			if mode, receipts, ok := tx.StagedFor(ident); ok {
				t.Staged = &engine.Staged{Receipts: receipts, Overwrite: mode == txn.Overwrite}
			}
		}
		return t, nil
	}
}

// creating resolves a table that the query's transaction is creating by
// a staged create, which no catalog lists yet: it reads as the create
// will make it (catalogs.CreateScanner). ok is false when there is none.
func creating(ctx context.Context, catalog string, p catalogs.Provider, sc catalogs.Scanner, schema, name string) (engine.Table, bool, error) {
	tx := queryTxn(ctx)
	cs, isCS := p.(catalogs.CreateScanner)
	if tx == nil || !isCS {
		return engine.Table{}, false, nil
	}
	ident := catalogs.TableIdent{Catalog: catalog, Namespace: []string{schema}, Name: name}
	schemaIn, opts, receipts, ok := tx.CreatingFor(ident)
	if !ok {
		return engine.Table{}, false, nil
	}
	read, err := cs.CreateSchema(ctx, ident, schemaIn, opts)
	if err != nil {
		return engine.Table{}, false, err
	}
	return engine.Table{Ident: ident, Scanner: sc, Schema: read,
		Staged: &engine.Staged{Receipts: receipts, Create: &engine.Create{Schema: schemaIn, Opts: opts}}}, true, nil
}

// queryTxnKey keys the transaction a query runs in, in its context.
type queryTxnKey struct{}

// withQueryTxn is ctx for a query inside tx (nil for none): the tables
// it resolves carry what tx staged for them, so the query reads its own
// transaction's writes.
func withQueryTxn(ctx context.Context, tx *txn.Txn) context.Context {
	if tx == nil {
		return ctx
	}
	return context.WithValue(ctx, queryTxnKey{}, tx)
}

func queryTxn(ctx context.Context) *txn.Txn {
	tx, _ := ctx.Value(queryTxnKey{}).(*txn.Txn)
	return tx
}

// txnID is tx's id, "" for none.
func txnID(tx *txn.Txn) string {
	if tx == nil {
		return ""
	}
	return tx.ID()
}

// preparedTxn is the transaction a prepared query runs in: the one it was
// prepared in while that is open; once that ended (the client committed
// and reuses the statement), the session's open transaction, if any.
func (h *Handler) preparedTxn(ctx context.Context, p auth.Principal, id []byte) (*txn.Txn, error) {
	tx, err := h.ingestTxn(ctx, p, id)
	if err != nil && len(id) > 0 && errors.Is(err, catalogs.ErrFailedPrecondition) {
		return h.ingestTxn(ctx, p, nil)
	}
	return tx, err
}

// ticketTxn is ctx for a ticket's query: inside its transaction while
// that is open; once it ended, the query reads what was committed.
func (h *Handler) ticketTxn(ctx context.Context, p auth.Principal, id string) context.Context {
	if id == "" {
		return ctx
	}
	tx, err := h.opts.Txns.Get(p.ID(), id)
	if err != nil {
		return ctx
	}
	return withQueryTxn(ctx, tx)
}

// queryDefaults are the caller's default catalog and schema: its session
// options, else the configured defaults.
func (h *Handler) queryDefaults(ctx context.Context, p auth.Principal) (string, string) {
	o := h.sessionOptions(ctx, p)
	cat, schema := o.catalog, o.schema
	if cat == "" {
		cat = h.opts.DefaultCatalog
	}
	if schema == "" {
		schema = h.opts.DefaultSchema
	}
	return cat, schema
}

// describe binds a query for the caller without reading data.
func (h *Handler) describe(ctx context.Context, query string) (*engine.Description, auth.Principal, string, string, error) {
	d, _, p, cat, schema, err := h.describeSplit(ctx, query, false)
	return d, p, cat, schema, err
}

// describeSplit is describe, and with split the parts the query may be
// read in (see queryInfo).
func (h *Handler) describeSplit(ctx context.Context, query string, split bool) (*engine.Description, []engine.Part, auth.Principal, string, string, error) {
	eng, err := h.sqlEngine()
	if err != nil {
		return nil, nil, auth.Principal{}, "", "", err
	}
	p, err := principal(ctx)
	if err != nil {
		return nil, nil, p, "", "", err
	}
	cat, schema := h.queryDefaults(ctx, p)
	var opts engine.SplitOptions
	if split {
		opts = h.splitOptions()
	}
	d, parts, err := eng.DescribeSplit(ctx, query, h.resolver(ctx, p, cat, schema), opts)
	if err != nil {
		return nil, nil, p, "", "", queryStatus(err)
	}
	return d, parts, p, cat, schema, nil
}

// splitOptions bound how queries are split into endpoints.
func (h *Handler) splitOptions() engine.SplitOptions {
	return engine.SplitOptions{MaxParts: h.opts.MaxEndpoints, MinBytes: h.opts.SplitMinBytes}
}

// GetFlightInfoStatement answers CommandStatementQuery: the result schema
// and one endpoint whose ticket is the signed, self-contained query.
func (h *Handler) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if isInsert(cmd.GetQuery()) {
		return nil, status.Error(codes.InvalidArgument, "INSERT is an update: execute it with executeUpdate (CommandStatementUpdate)")
	}
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := h.ingestTxn(ctx, p, cmd.GetTransactionId())
	if err != nil {
		return nil, Status(err)
	}
	ctx = withQueryTxn(ctx, tx)
	d, parts, p, cat, schema, err := h.describeSplit(ctx, cmd.GetQuery(), true)
	if err != nil {
		return nil, err
	}
	if d.Params.NumFields() > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "the query has %d parameter(s): use a prepared statement", d.Params.NumFields())
	}
	t := ticket{SQL: cmd.GetQuery(), Catalog: cat, Schema: schema, Owner: p.ID(), TxnID: txnID(tx)}
	if len(parts) <= 1 {
		t.Push = newPushTicket(d, h.Alloc)
	}
	return h.queryInfo(desc, columnSchema(d.Schema, d.Origins), t, parts)
}

// GetSchemaStatement answers GetSchema for CommandStatementQuery.
func (h *Handler) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	d, _, _, _, err := h.describe(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(columnSchema(d.Schema, d.Origins), h.Alloc)}, nil
}

// queryInfo builds the FlightInfo of a query with a fresh query id: one
// endpoint, or one per part when the engine split the query (a query that
// only filters and projects a large table of several files), which
// clients may read in parallel.
func (h *Handler) queryInfo(desc *flight.FlightDescriptor, schema *arrow.Schema, t ticket, parts []engine.Part) (*flight.FlightInfo, error) {
	t.ID = randomID()
	t.Expires = time.Now().Add(h.ticketTTL()).Unix()
	tickets := []ticket{t}
	if len(parts) > 1 {
		tickets = tickets[:0]
		for _, part := range parts {
			pt := t
			pt.Part, pt.Parts, pt.Snapshot = part.Index, part.Count, part.Snapshot
			tickets = append(tickets, pt)
		}
		h.log.Debug("query split", "query_id", t.ID, "endpoints", len(parts))
	}
	var endpoints []*flight.FlightEndpoint
	for _, t := range tickets {
		handle, err := h.signTicket(t)
		if err != nil {
			return nil, Status(err)
		}
		tkt, err := flightsql.CreateStatementQueryTicket(handle)
		if err != nil {
			return nil, Status(err)
		}
		endpoints = append(endpoints, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tkt}})
	}
	return &flight.FlightInfo{
		Endpoint:         endpoints,
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(schema, h.Alloc),
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// DoGetStatement runs the query a ticket carries and streams its result.
// Its batches may be relayed ones (relayedBatch): its caller, the
// server's DoGet, sends them on as received or decodes them.
func (h *Handler) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, nil, err
	}
	t, err := h.openTicket(tkt.GetStatementHandle(), p.ID(), time.Now())
	if err != nil {
		return nil, nil, err
	}
	params, err := decodeParams(t.Params, h.Alloc)
	if err != nil {
		return nil, nil, err
	}
	if params != nil {
		defer params.Release()
	}
	var part *engine.Part
	if t.Parts > 0 {
		part = &engine.Part{Index: t.Part, Count: t.Parts, Snapshot: t.Snapshot}
	}
	ctx = h.ticketTxn(ctx, p, t.TxnID)
	if part != nil || params != nil {
		t.Push = nil
	}
	return h.runQuery(ctx, p, t.ID, part, t.SQL, params, t.Catalog, t.Schema, t.Push, true)
}

// runQuery starts a query and streams it batch by batch: a batch is only
// produced when the previous one has been handed to gRPC, so memory stays
// bounded whatever the result's size. The query stops when the client
// goes away or CancelFlightInfo names it.
//
// push, when set, is the query as GetFlightInfo found it pushed whole: it
// goes to its backend without the engine (engine.QueryPushed), unless
// that finds it no longer is the backend's to run. relay tells whether
// the caller's writer takes relayed batches (relayedBatch) as they are;
// else they are decoded here, where a batch that does not decode is the
// query's error.
func (h *Handler) runQuery(ctx context.Context, p auth.Principal, id string, part *engine.Part, query string, params arrow.RecordBatch,
	cat, schema string, push *pushTicket, relay bool) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	eng, err := h.sqlEngine()
	if err != nil {
		return nil, nil, err
	}
	release, err := h.querySlot(ctx)
	if err != nil {
		return nil, nil, err
	}
	rpcCtx := ctx
	ctx, cancel := h.statementContext(ctx)
	key := runKey(id, part)
	if err := h.track(id, key, cancel); err != nil {
		cancel()
		release()
		return nil, nil, err
	}
	if relay {
		ctx = catalogs.WithRelay(ctx)
	}
	var rows *engine.Rows
	pushed := false
	if push != nil {
		rows, pushed, err = h.queryPushed(ctx, eng, p, push, cat, schema)
	}
	switch {
	case pushed || err != nil:
	case part != nil:
		rows, err = eng.QueryPart(ctx, query, params, h.resolver(ctx, p, cat, schema), *part)
	default:
		rows, err = eng.Query(ctx, query, params, h.resolver(ctx, p, cat, schema))
	}
	if err != nil {
		h.untrack(key)
		if st := h.timedOut(ctx, "query "+id); st != nil {
			err = st
		}
		cancel()
		release()
		h.log.Info("query failed", "query_id", id, "principal", p.Name, "err", err)
		return nil, nil, queryStatus(err)
	}
	if pushed {
		h.log.Debug("query sent to its backend as its ticket carries it, without the engine", "query_id", id)
	}
	for _, s := range rows.Scans() {
		h.log.Debug("query scan", "query_id", id, "table", s.Table.String(), "columns", len(s.Columns),
			"filters", len(s.Filters), "files_planned", s.FilesPlanned, "files_total", s.FilesTotal, "native", s.Native, "direct", s.Direct, "pushed", s.Pushed)
	}
	// The stream's batches carry the schema with the column metadata:
	// Flight's writer refuses a batch whose schema differs from the
	// stream's, metadata included.
	out := columnSchema(rows.Schema(), rows.Origins())
	ch := make(chan flight.StreamChunk, 1)
	go func() {
		defer release() // last: once the query's work is over
		defer close(ch)
		defer cancel()
		defer h.untrack(key)
		defer rows.Close()
		err := func() (err error) {
			// The query's rows are read here, off the handler's
			// goroutine: a panic is this query's error.
			defer recovered.Catch(&err, "query "+id)
			for rows.Next() {
				b, err := withSchema(rows.RecordBatch(), out, relay)
				if err != nil {
					return err
				}
				select {
				case ch <- flight.StreamChunk{Data: b}:
				case <-ctx.Done():
					b.Release()
				}
				if ctx.Err() != nil {
					break
				}
			}
			return rows.Err()
		}()
		if st := h.timedOut(ctx, "query "+id); st != nil {
			err = st
			h.log.Info("query timed out", "query_id", id, "principal", p.Name, "timeout", h.opts.StatementTimeout)
		} else if ctx.Err() != nil {
			// Cancelled by CancelFlightInfo (the client is still there
			// to be told) or by the client going away.
			err = status.Error(codes.Canceled, "query cancelled")
		}
		if err != nil {
			select {
			case ch <- flight.StreamChunk{Err: queryStatus(err)}:
			case <-rpcCtx.Done():
			}
		}
	}()
	return out, ch, nil
}

// relayedBatch is a batch a backend hands on as its upstream sent it
// (catalogs/flightsql: an upstream Flight SQL server's record batch
// message, internal/flightframe.Batch), its columns decoded only when
// asked for: the server's DoGet sends its message on as it is.
type relayedBatch interface {
	arrow.RecordBatch
	// WithSchema is the same batch typed as s (the same column types).
	WithSchema(s *arrow.Schema) arrow.RecordBatch
	// Decode decodes the columns, or says why they do not decode.
	Decode() error
}

// withSchema is src typed as out (the stream's schema, with the columns'
// metadata); a relayed batch stays one when relay is set, else is
// decoded.
func withSchema(src arrow.RecordBatch, out *arrow.Schema, relay bool) (arrow.RecordBatch, error) {
	if r, ok := src.(relayedBatch); ok {
		if relay {
			return r.WithSchema(out), nil
		}
		if err := r.Decode(); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(out, src.Columns(), src.NumRows()), nil
}

// queryPushed runs a ticket's pushed query on its backend (ok false: the
// engine is to run the query instead).
func (h *Handler) queryPushed(ctx context.Context, eng *engine.Engine, p auth.Principal, push *pushTicket, cat, schema string) (*engine.Rows, bool, error) {
	q, err := push.query(h.Alloc)
	if err != nil {
		return nil, false, err
	}
	return eng.QueryPushed(ctx, q, push.Origins, h.resolver(ctx, p, cat, schema))
}

// querySlot waits for a slot among limits.max_concurrent_queries, at
// most limits.query_queue_wait; the caller releases it when its query is
// over.
func (h *Handler) querySlot(ctx context.Context) (release func(), err error) {
	if h.querySlots == nil {
		h.running.Add(1)
		return func() { h.running.Add(-1) }, nil
	}
	wait := h.opts.QueryQueueWait
	if wait <= 0 {
		wait = DefaultQueryQueueWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	select {
	case h.querySlots <- struct{}{}:
		h.running.Add(1)
		return func() { h.running.Add(-1); <-h.querySlots }, nil
	case <-timer.C:
		return nil, status.Errorf(codes.ResourceExhausted,
			"too many concurrent queries (limits.max_concurrent_queries = %d): no slot freed within %s (limits.query_queue_wait)", cap(h.querySlots), wait)
	case <-ctx.Done():
		return nil, status.Errorf(codes.Canceled, "the call ended while its query waited for a slot (limits.max_concurrent_queries = %d): %v", cap(h.querySlots), ctx.Err())
	}
}

// QuerySlots reports, for metrics, the queries running (holding a slot of
// limits.max_concurrent_queries), those waiting for one, and the limit
// (0: none).
func (h *Handler) QuerySlots() (running, waiting, limit int) {
	return int(h.running.Load()), int(h.waiting.Load()), cap(h.querySlots)
}

// errStatementTimeout is the cause of a query context that outlived
// Options.StatementTimeout.
var errStatementTimeout = errors.New("statement timeout")

// statementContext is the context a query runs in: ctx, cancellable, and
// bounded by the statement timeout when one is set.
func (h *Handler) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.opts.StatementTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, h.opts.StatementTimeout, errStatementTimeout)
}

// timedOut is the DeadlineExceeded status of a statement whose context
// ran past the statement timeout; nil otherwise.
func (h *Handler) timedOut(ctx context.Context, what string) error {
	if !errors.Is(context.Cause(ctx), errStatementTimeout) {
		return nil
	}
	return status.Errorf(codes.DeadlineExceeded, "%s ran past the statement timeout of %s (timeouts.statement)", what, h.opts.StatementTimeout)
}

// runKey names one running read of a query: the query, or one of its
// parts.
func runKey(id string, part *engine.Part) string {
	if part == nil {
		return id
	}
	return fmt.Sprintf("%s#%d", id, part.Index)
}

// track registers a running read (key) of query id; a query already
// cancelled is refused.
func (h *Handler) track(id, key string, cancel context.CancelFunc) error {
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	if _, ok := h.sql.cancelled[id]; ok {
		return status.Error(codes.Canceled, "query cancelled")
	}
	if h.sql.running == nil {
		h.sql.running = map[string]context.CancelFunc{}
	}
	h.sql.running[key] = cancel
	return nil
}

func (h *Handler) untrack(key string) {
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	delete(h.sql.running, key)
}

// CancelFlightInfo cancels the queries of a FlightInfo: a running one
// stops, and its tickets are refused from then on.
func (h *Handler) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	notCancelled := flight.CancelStatusNotCancellable
	p, err := principal(ctx)
	if err != nil {
		return flight.CancelFlightInfoResult{Status: notCancelled}, err
	}
	if req.GetInfo() == nil || len(req.GetInfo().GetEndpoint()) == 0 {
		return flight.CancelFlightInfoResult{Status: notCancelled}, status.Error(codes.InvalidArgument, "cancel: the request has no FlightInfo endpoints")
	}
	now := time.Now()
	for _, ep := range req.GetInfo().GetEndpoint() {
		q, err := flightsql.GetStatementQueryTicket(ep.GetTicket())
		if err != nil {
			return flight.CancelFlightInfoResult{Status: notCancelled}, status.Errorf(codes.InvalidArgument, "cancel: not a query ticket: %v", err)
		}
		t, err := h.openTicket(q.GetStatementHandle(), p.ID(), now)
		if err != nil {
			return flight.CancelFlightInfoResult{Status: notCancelled}, err
		}
		h.sql.mu.Lock()
		if h.sql.cancelled == nil {
			h.sql.cancelled = map[string]time.Time{}
		}
		for id, exp := range h.sql.cancelled {
			if now.After(exp) {
				delete(h.sql.cancelled, id)
			}
		}
		h.sql.cancelled[t.ID] = time.Unix(t.Expires, 0)
		var part *engine.Part
		if t.Parts > 0 {
			part = &engine.Part{Index: t.Part}
		}
		if cancel, ok := h.sql.running[runKey(t.ID, part)]; ok {
			cancel()
		}
		h.sql.mu.Unlock()
		h.log.Info("query cancelled", "query_id", t.ID, "principal", p.Name, "forwarded", Forwarded(ctx))
	}
	if h.opts.Peers == nil || Forwarded(ctx) {
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
	}
	// The DoGet may run on another replica: tell them all. One that
	// cannot be told may still be running it, so the answer is then
	// CANCELLING (accepted, not known to be done everywhere).
	if err := h.opts.Peers.Cancel(ctx, req); err != nil {
		h.log.Warn("cancel not delivered to every replica", "principal", p.Name, "err", err)
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelling}, nil
	}
	return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
}

// Forwarded tells a call another replica forwarded (ForwardedHeader).
func Forwarded(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(ForwardedHeader)) > 0
}
