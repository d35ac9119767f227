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

// prepared is an open prepared statement.
type prepared struct {
	owner   string
	sql     string
	txnID   []byte
	insert  *insertStmt // nil for a query
	dataset *arrow.Schema
	params  *arrow.Schema
	// bound is the last row of parameters DoPutPreparedStatementQuery
	// bound (nil for none).
	bound arrow.RecordBatch
}

var emptySchema = arrow.NewSchema(nil, nil)

// CreatePreparedStatement answers ActionCreatePreparedStatementRequest: a
// query (dataset and parameter schemas from the engine) or an INSERT
// (parameters are the target columns when it is VALUES (?, ...)).
func (h *Handler) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	p, err := principal(ctx)
	if err != nil {
		return res, err
	}
	st := &prepared{owner: p.ID(), sql: req.GetQuery(), txnID: req.GetTransactionId()}
	isUpdate := isInsert(st.sql)
	if isUpdate {
		if err := h.prepareInsert(ctx, st); err != nil {
			return res, err
		}
	} else {
		d, _, _, _, err := h.describe(ctx, st.sql)
		if err != nil {
			return res, err
		}
		st.dataset, st.params = d.Schema, d.Params
	}
	handle := randomID()
	h.sql.mu.Lock()
	if len(h.sql.prepared) >= MaxPreparedStatements {
		h.sql.mu.Unlock()
		return res, status.Errorf(codes.ResourceExhausted, "too many open prepared statements (%d): close some", MaxPreparedStatements)
	}
	if h.sql.prepared == nil {
		h.sql.prepared = map[string]*prepared{}
	}
	h.sql.prepared[handle] = st
	h.sql.mu.Unlock()
	return flightsql.ActionCreatePreparedStatementResult{
		Handle: []byte(handle), DatasetSchema: st.dataset, ParameterSchema: st.params, IsUpdate: &isUpdate,
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
		for i, f := range t.fields {
			fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true}
		}
		st.params = arrow.NewSchema(fields, nil)
		return nil
	}
	eng, err := h.sqlEngine()
	if err != nil {
		return err
	}
	d, err := eng.Describe(ctx, ins.castQuery(t.schema, t.fields), h.resolver(ctx, t.p, t.defCatalog, t.defSchema))
	if err != nil {
		return queryStatus(err)
	}
	st.params = d.Params
	return nil
}

// lookup finds the caller's prepared statement.
func (h *Handler) lookup(ctx context.Context, handle []byte) (*prepared, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	st, ok := h.sql.prepared[string(handle)]
	if !ok || st.owner != p.ID() {
		return nil, status.Error(codes.NotFound, "prepared statement not found (closed, or opened on another gateway)")
	}
	return st, nil
}

// ClosePreparedStatement answers ActionClosePreparedStatementRequest.
func (h *Handler) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	st, err := h.lookup(ctx, req.GetPreparedStatementHandle())
	if err != nil {
		return err
	}
	h.sql.mu.Lock()
	delete(h.sql.prepared, string(req.GetPreparedStatementHandle()))
	h.sql.mu.Unlock()
	if st.bound != nil {
		st.bound.Release()
	}
	return nil
}

// DoPutPreparedStatementQuery binds parameters: the last row sent is kept
// for the next execution.
func (h *Handler) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	st, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
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
	h.sql.mu.Lock()
	old := st.bound
	st.bound = last
	h.sql.mu.Unlock()
	if old != nil {
		old.Release()
	}
	return cmd.GetPreparedStatementHandle(), nil
}

// boundParams returns the statement's parameters, retained.
func (h *Handler) boundParams(st *prepared) arrow.RecordBatch {
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	if st.bound != nil {
		st.bound.Retain()
	}
	return st.bound
}

// GetFlightInfoPreparedStatement answers CommandPreparedStatementQuery:
// a ticket carrying the query and its bound parameters.
func (h *Handler) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	st, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	if st.insert != nil {
		return nil, status.Error(codes.InvalidArgument, "INSERT is an update: execute it with executeUpdate")
	}
	params := h.boundParams(st)
	if params != nil {
		defer params.Release()
	}
	enc, err := encodeParams(params)
	if err != nil {
		return nil, Status(err)
	}
	p, _ := principal(ctx)
	cat, schema := h.queryDefaults(ctx, p)
	tx, err := h.ingestTxn(ctx, p, st.txnID)
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
	st, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(st.dataset, h.Alloc)}, nil
}

// DoGetPreparedStatement runs a prepared query with its bound parameters
// (for clients that send the command itself as the ticket).
func (h *Handler) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	st, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	p, _ := principal(ctx)
	params := h.boundParams(st)
	if params != nil {
		defer params.Release()
	}
	cat, schema := h.queryDefaults(ctx, p)
	tx, err := h.ingestTxn(ctx, p, st.txnID)
	if err != nil {
		return nil, nil, Status(err)
	}
	return h.runQuery(withQueryTxn(ctx, tx), p, randomID(), nil, st.sql, params, cat, schema)
}

// DoPutPreparedStatementUpdate executes a prepared INSERT. For INSERT ...
// VALUES (?, ..., ?) every parameter batch is a batch of rows for the
// table and goes, renamed to the table's columns, straight into the
// bulk-ingest write path: one commit (or one transaction entry) for the
// whole upload. Otherwise the source runs once per parameter row.
func (h *Handler) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	st, err := h.lookup(ctx, cmd.GetPreparedStatementHandle())
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
			c := b.Column(i)
			c.Retain()
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
