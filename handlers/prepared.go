package handlers

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/engine"
)

// MaxPreparedStatements bounds the open prepared statements of one
// gateway; a client that never closes its statements cannot exhaust
// memory.
const MaxPreparedStatements = 10000

// prepared is an open prepared statement, as the local map caches it.
type prepared struct {
	// id is its handle's statement id (the map key).
	id    string
	owner string
	// session is the session that prepared it here (sessionKey): its
	// share of limits.prepared_per_session, closed when the session ends.
	session string
	// seq orders the cached statements by age, for eviction.
	seq     uint64
	sql     string
	txnID   []byte
	insert  *insertStmt // nil for a query
	dataset *arrow.Schema
	params  *arrow.Schema
	// bound is the last row of parameters DoPutPreparedStatementQuery
	// bound here (nil for none, or no row) when hasBound; boundFrom is the
	// binding of the handle that call presented ("" for the handle
	// CreatePreparedStatement returned): see boundParams.
	bound     arrow.RecordBatch
	boundFrom string
	hasBound  bool
	// fromHandle: rebuilt from a handle rather than created here; the
	// map evicts such entries first.
	fromHandle bool
}

var emptySchema = arrow.NewSchema(nil, nil)

// CreatePreparedStatement answers ActionCreatePreparedStatementRequest: a
// query (dataset and parameter schemas from the engine) or an INSERT
// (parameters are the target columns when it is VALUES (?, ...)). The
// handle is self-contained and signed (preparedHandle), so any replica
// with the same key can execute it; this gateway also caches the
// statement.
func (h *Handler) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	p, err := principal(ctx)
	if err != nil {
		return res, err
	}
	st := &prepared{id: randomID(), owner: p.ID(), session: sessionKey(ctx), sql: req.GetQuery(), txnID: req.GetTransactionId()}
	if err := h.buildPrepared(ctx, st); err != nil {
		return res, err
	}
	handle, err := h.signPreparedHandle(preparedHandle{ID: st.id, SQL: st.sql, Owner: st.owner, TxnID: st.txnID})
	if err != nil {
		return res, Status(err)
	}
	if _, err := h.cachePrepared(st); err != nil {
		return res, err
	}
	isUpdate := st.insert != nil
	return flightsql.ActionCreatePreparedStatementResult{
		Handle: handle, DatasetSchema: st.dataset, ParameterSchema: st.params, IsUpdate: &isUpdate,
	}, nil
}

func (h *Handler) prepareInsert(ctx context.Context, st *prepared) error {
	ins, err := parseInsert(st.sql)
	if err != nil {
		return Status(err)
	}
	t, err := h.insertTarget(ctx, ins)
	if err != nil {
		return err
	}
	st.insert, st.dataset = ins, emptySchema
	if ins.placeholders > 0 {
		if ins.placeholders != len(t.fields) {
			return status.Errorf(codes.InvalidArgument, "INSERT into %s: %d placeholder(s) for %d column(s)", t.ident, ins.placeholders, len(t.fields))
		}
		fields := make([]arrow.Field, len(t.fields))
		origins := make([]engine.Origin, len(t.fields))
		for i, f := range t.fields {
			fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true}
			origins[i] = engine.Origin{Table: t.ident, Column: f.Name}
		}
		st.params = paramSchema(arrow.NewSchema(fields, nil), origins)
		return nil
	}
	eng, err := h.sqlEngine()
	if err != nil {
		return err
	}
	d, err := eng.Describe(ctx, ins.castQuery(t.schema, t.fields), h.resolver(ctx, t.p, t.defCatalog, t.defSchema))
	if err != nil {
		return queryStatus(insertError(t, err))
	}
	st.params = paramSchema(d.Params, nil)
	return nil
}

// lookup finds the caller's prepared statement: it verifies the handle
// (signature and owner), then takes the statement from the local map, or
// rebuilds it from the handle (the statement was prepared on another
// gateway, or closed or evicted here) and caches it.
func (h *Handler) lookup(ctx context.Context, handle []byte) (*prepared, preparedHandle, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, preparedHandle{}, err
	}
	ph, err := h.openPreparedHandle(handle, p.ID())
	if err != nil {
		return nil, ph, err
	}
	h.sql.mu.Lock()
	st, ok := h.sql.prepared[ph.ID]
	h.sql.mu.Unlock()
	if ok && st.owner == ph.Owner {
		return st, ph, nil
	}
	st = &prepared{id: ph.ID, owner: ph.Owner, session: sessionKey(ctx), sql: ph.SQL, txnID: ph.TxnID, fromHandle: true}
	if err := h.buildPrepared(ctx, st); err != nil {
		return nil, ph, err
	}
	st, err = h.cachePrepared(st)
	if err != nil {
		return nil, ph, err
	}
	h.log.Debug("prepared statement rebuilt from its handle", "id", ph.ID)
	return st, ph, nil
}

// ClosePreparedStatement answers ActionClosePreparedStatementRequest: it
// drops the local entry. A signed handle cannot be revoked on other
// gateways: it stays usable by its owner, which is harmless (it only
// names SQL its owner may run).
func (h *Handler) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	p, err := principal(ctx)
	if err != nil {
		return err
	}
	ph, err := h.openPreparedHandle(req.GetPreparedStatementHandle(), p.ID())
	if err != nil {
		return err
	}
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	st, ok := h.sql.prepared[ph.ID]
	if !ok || st.owner != ph.Owner {
		return nil
	}
	h.uncacheLocked(st)
	return nil
}

// DoPutPreparedStatementQuery binds parameters: the last row sent is kept
// for the next execution, here, and in the handle returned, which carries
// it to whichever gateway executes the statement.
func (h *Handler) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	st, ph, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	var last arrow.RecordBatch
	for rdr.Next() {
		b := rdr.RecordBatch()
		if b.NumRows() == 0 {
			continue
		}
		if last != nil {
			last.Release()
		}
		last = b.NewSlice(b.NumRows()-1, b.NumRows())
	}
	if err := rdr.Err(); err != nil {
		if last != nil {
			last.Release()
		}
		return nil, status.Errorf(codes.InvalidArgument, "binding parameters: %v", err)
	}
	enc, err := encodeParams(last)
	if err == nil && len(enc) > MaxBoundParamsBytes {
		err = status.Errorf(codes.InvalidArgument, "binding parameters: %d bytes encoded, over the limit of %d bytes (1 MiB) for a row of parameters",
			len(enc), MaxBoundParamsBytes)
	}
	if err != nil {
		if last != nil {
			last.Release()
		}
		return nil, Status(err)
	}
	bind := randomID()
	h.sql.mu.Lock()
	var old arrow.RecordBatch
	if h.cached(st) {
		old, st.bound, st.boundFrom, st.hasBound = st.bound, last, ph.Bind, true
	} else {
		old = last // not cached here: the handle carries the parameters
	}
	h.sql.mu.Unlock()
	if old != nil {
		old.Release()
	}
	h.log.Debug("prepared statement bound", "id", ph.ID, "handle_bind", ph.Bind, "bind", bind)
	ph.Params, ph.Bind = enc, bind
	handle, err := h.signPreparedHandle(ph)
	if err != nil {
		return nil, Status(err)
	}
	return handle, nil
}

// boundParams returns the parameters to run st with, retained: those the
// handle carries, unless this gateway bound parameters to that very
// handle since. Then the caller is a client that does not use the handle
// a binding returns (it presents the handle it bound with), and the
// binding it made here is newer than the one its handle carries. A client
// that uses the returned handle always runs with that handle's
// parameters, whichever replica bound them and whatever this replica
// bound before.
func (h *Handler) boundParams(st *prepared, ph preparedHandle) (arrow.RecordBatch, error) {
	h.sql.mu.Lock()
	if st.hasBound && st.boundFrom == ph.Bind {
		b := st.bound
		if b != nil {
			b.Retain()
		}
		h.sql.mu.Unlock()
		h.log.Debug("prepared statement parameters", "id", ph.ID, "from", "local", "handle_bind", ph.Bind)
		return b, nil
	}
	h.sql.mu.Unlock()
	if ph.Bind != "" {
		h.log.Debug("prepared statement parameters", "id", ph.ID, "from", "handle", "handle_bind", ph.Bind)
	}
	return decodeParams(ph.Params, h.Alloc)
}

// GetFlightInfoPreparedStatement answers CommandPreparedStatementQuery:
// a ticket carrying the query and its bound parameters.
func (h *Handler) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	st, ph, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	if st.insert != nil {
		return nil, status.Error(codes.InvalidArgument, "INSERT is an update: execute it with executeUpdate")
	}
	params, err := h.boundParams(st, ph)
	if err != nil {
		return nil, err
	}
	if params != nil {
		defer params.Release()
	}
	enc, err := encodeParams(params)
	if err != nil {
		return nil, Status(err)
	}
	p, _ := principal(ctx)
	cat, schema := h.queryDefaults(ctx, p)
	tx, err := h.preparedTxn(ctx, p, st.txnID)
	if err != nil {
		return nil, Status(err)
	}
	ctx = withQueryTxn(ctx, tx)
	var parts []engine.Part
	if eng, err := h.sqlEngine(); err == nil {
		parts, err = eng.Split(ctx, st.sql, params, h.resolver(ctx, p, cat, schema), h.splitOptions())
		if err != nil {
			// Read whole; DoGet reports what is wrong with the query.
			h.log.Debug("prepared query not split", "err", err)
			parts = nil
		}
	}
	return h.queryInfo(desc, st.dataset, ticket{SQL: st.sql, Params: enc, Catalog: cat, Schema: schema, Owner: st.owner, TxnID: txnID(tx)}, parts)
}

// GetSchemaPreparedStatement answers GetSchema for a prepared statement.
func (h *Handler) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	st, _, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(st.dataset, h.Alloc)}, nil
}

// DoGetPreparedStatement runs a prepared query with its bound parameters
// (for clients that send the command itself as the ticket).
func (h *Handler) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	st, ph, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	p, _ := principal(ctx)
	params, err := h.boundParams(st, ph)
	if err != nil {
		return nil, nil, err
	}
	if params != nil {
		defer params.Release()
	}
	cat, schema := h.queryDefaults(ctx, p)
	tx, err := h.preparedTxn(ctx, p, st.txnID)
	if err != nil {
		return nil, nil, Status(err)
	}
	return h.runQuery(withQueryTxn(ctx, tx), p, randomID(), nil, st.sql, params, cat, schema, nil, false)
}

// DoPutPreparedStatementUpdate executes a prepared INSERT. For INSERT ...
// VALUES (?, ..., ?) every parameter batch is a batch of rows for the
// table and goes, renamed to the table's columns, straight into the
// bulk-ingest write path: one commit (or one transaction entry) for the
// whole upload. Otherwise the source runs once per parameter row.
func (h *Handler) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	st, _, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	if st.insert == nil {
		return 0, status.Error(codes.InvalidArgument, "a query is not an update: execute it with executeQuery")
	}
	if st.insert.placeholders > 0 {
		t, err := h.insertTarget(ctx, st.insert)
		if err != nil {
			return 0, err
		}
		n, err := h.writeInsert(ctx, t, st.txnID, h.paramRows(t, rdr))
		return n, Status(err)
	}
	var total int64
	ran := false
	for rdr.Next() {
		b := rdr.RecordBatch()
		for i := range b.NumRows() {
			row := b.NewSlice(i, i+1)
			n, err := h.update(ctx, st.sql, st.txnID, row)
			row.Release()
			if err != nil {
				return total, err
			}
			total += n
			ran = true
		}
	}
	if err := rdr.Err(); err != nil {
		return total, status.Errorf(codes.InvalidArgument, "reading parameters: %v", err)
	}
	if !ran && (st.params == nil || st.params.NumFields() == 0) {
		return h.update(ctx, st.sql, st.txnID, nil)
	}
	return total, nil
}

// paramRows turns parameter batches into table batches: column i is the
// i-th target column; unlisted columns are null.
func (h *Handler) paramRows(t *insertTable, rdr flight.MessageReader) *batchSource {
	var cur arrow.RecordBatch
	var err error
	release := func() {
		if cur != nil {
			cur.Release()
			cur = nil
		}
	}
	next := func() bool {
		release()
		for rdr.Next() {
			b := rdr.RecordBatch()
			if b.NumRows() == 0 {
				continue
			}
			if int(b.NumCols()) != len(t.fields) {
				err = status.Errorf(codes.InvalidArgument, "INSERT into %s: %d parameter column(s) for %d placeholder(s)", t.ident, b.NumCols(), len(t.fields))
				return false
			}
			cur = h.asTableBatch(t, b)
			return true
		}
		return false
	}
	return &batchSource{
		schema: t.schema,
		next:   next,
		batch:  func() arrow.RecordBatch { return cur },
		err: func() error {
			if err != nil {
				return err
			}
			return rdr.Err()
		},
		close: release,
	}
}

// asTableBatch renames parameter columns to the target columns and adds
// null columns for the others; the backend conforms the types.
func (h *Handler) asTableBatch(t *insertTable, b arrow.RecordBatch) arrow.RecordBatch {
	pos := map[string]int{}
	for i, f := range t.fields {
		pos[f.Name] = i
	}
	n := b.NumRows()
	var fields []arrow.Field
	var cols []arrow.Array
	for _, f := range t.schema.Fields() {
		if i, ok := pos[f.Name]; ok {
			c := h.widenTime(b.Column(i), f.Type)
			cols = append(cols, c)
			fields = append(fields, arrow.Field{Name: f.Name, Type: c.DataType(), Nullable: true})
			continue
		}
		cols = append(cols, array.MakeArrayOfNull(h.Alloc, f.Type, int(n)))
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
	}
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	for _, c := range cols {
		c.Release()
	}
	return out
}

// widenTime returns c, retained, or when the table's column is a
// time64 and c the time32 the parameter schema declares (paramSchema), c
// converted to it: the write path conforms timestamps, not times.
func (h *Handler) widenTime(c arrow.Array, want arrow.DataType) arrow.Array {
	t32, ok := c.(*array.Time32)
	w, ok2 := want.(*arrow.Time64Type)
	if !ok || !ok2 {
		c.Retain()
		return c
	}
	unit := t32.DataType().(*arrow.Time32Type).Unit
	b := array.NewTime64Builder(h.Alloc, w)
	defer b.Release()
	for i := range t32.Len() {
		if t32.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.Append(arrow.Time64(int64(t32.Value(i)) * int64(unit.Multiplier()) / int64(w.Unit.Multiplier())))
	}
	return b.NewArray()
}
