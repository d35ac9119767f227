package handlers

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/engine"
	"github.com/flightgw/flightgw/txn"
)

// DoPutCommandStatementUpdate answers CommandStatementUpdate. INSERT INTO
// t VALUES (...) and INSERT INTO t SELECT ... run their source through the
// engine and write its batches like a bulk ingest (append), inside the
// session's transaction when one is open. Other statements are refused
// by name.
func (h *Handler) DoPutCommandStatementUpdate(ctx context.Context, cmd flightsql.StatementUpdate) (int64, error) {
	n, err := h.update(ctx, cmd.GetQuery(), cmd.GetTransactionId(), nil)
	if err != nil {
		h.log.Info("update failed", "kind", engine.StatementKind(cmd.GetQuery()), "code", Code(err).String(), "err", err)
	}
	return n, err
}

// update runs an update statement with an optional row of parameters.
func (h *Handler) update(ctx context.Context, query string, txnID []byte, params arrow.RecordBatch) (int64, error) {
	if err := refuseNonInsert(query); err != nil {
		return 0, err
	}
	st, err := parseInsert(query)
	if err != nil {
		return 0, Status(err)
	}
	p, err := principal(ctx)
	if err != nil {
		return 0, err
	}
	// The transaction first: a table it is creating is a target too.
	tx, err := h.ingestTxn(ctx, p, txnID)
	if err != nil {
		return 0, Status(err)
	}
	t, err := h.insertTarget(withQueryTxn(ctx, tx), st)
	if err != nil {
		return 0, err
	}
	src, err := h.insertSource(withQueryTxn(ctx, tx), t, st, params)
	if err != nil {
		return 0, err
	}
	defer src.close()
	n, err := h.writeInsert(ctx, t, txnID, src)
	return n, Status(err)
}

// refuseNonInsert refuses every update statement but INSERT by name.
func refuseNonInsert(query string) error {
	if kinds := engine.StatementKinds(query); len(kinds) > 1 {
		// Before the first statement's kind: an INSERT or a query may
		// come first and anything after it.
		return status.Errorf(codes.InvalidArgument, "multiple statements are not supported: %s (send one statement per request)",
			strings.Join(kinds, "; "))
	}
	switch kind := engine.StatementKind(query); {
	case kind == "INSERT":
		return nil
	case kind == "SHOW" || kind == "DESCRIBE" || kind == "SUMMARIZE":
		return status.Errorf(codes.InvalidArgument, "%s is not supported: DuckDB's catalog is not readable from SQL "+
			"(use the Flight SQL metadata calls: GetCatalogs, GetDbSchemas, GetTables with schemas)", kind)
	case kind == "SELECT" || kind == "WITH" || kind == "VALUES" || kind == "FROM":
		return status.Errorf(codes.InvalidArgument, "%s is a query, not an update: execute it with executeQuery (CommandStatementQuery)", kind)
	case kind == "":
		return status.Error(codes.InvalidArgument, "empty statement")
	case knownStatements[kind]:
		return status.Errorf(codes.Unimplemented, "%s statements are not supported: flightgw executes queries and INSERT", kind)
	default:
		return status.Errorf(codes.InvalidArgument, "syntax error: %q does not start a statement", kind)
	}
}

// knownStatements are statement keywords that flightgw does not run.
var knownStatements = map[string]bool{
	"UPDATE": true, "DELETE": true, "MERGE": true, "DROP": true, "CREATE": true, "ALTER": true, "TRUNCATE": true,
	"COPY": true, "ATTACH": true, "DETACH": true, "INSTALL": true, "LOAD": true, "SET": true, "RESET": true,
	"PRAGMA": true, "CALL": true, "EXPORT": true, "IMPORT": true, "VACUUM": true, "CHECKPOINT": true,
	"GRANT": true, "REVOKE": true, "BEGIN": true, "START": true, "COMMIT": true, "ROLLBACK": true, "ABORT": true,
	"USE": true, "EXPLAIN": true, "PREPARE": true,
	"EXECUTE": true, "DEALLOCATE": true, "UPSERT": true, "REPLACE": true, "ANALYZE": true,
}

// insertTable is the resolved target of an INSERT.
type insertTable struct {
	p      auth.Principal
	cat    Catalog
	ident  catalogs.TableIdent
	schema *arrow.Schema
	fields []arrow.Field
	// catalog and schema defaults for the source query.
	defCatalog, defSchema string
}

func (h *Handler) insertTarget(ctx context.Context, st *insertStmt) (*insertTable, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	defCat, defSchema := h.queryDefaults(ctx, p)
	catName, schema := st.catalog, st.schema
	if catName == "" {
		catName = defCat
	}
	if schema == "" {
		schema = defSchema
	}
	cat, _, err := h.catalog(ctx, catName)
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "INSERT: table %s not found", strings.Join([]string{catName, schema, st.table}, "."))
	}
	ident, spec, err := h.findTable(ctx, cat, schema, st.table, h.tableIdent(cat.Name, schema, st.table).String())
	if errors.Is(err, catalogs.ErrNotFound) {
		// A table the caller's transaction is creating (a staged create).
		if c, ok, cerr := creating(ctx, cat.Name, cat.Provider, nil, schema, st.table); ok || cerr != nil {
			ident, spec.Schema, err = c.Ident, c.Schema, cerr
		}
	}
	if err != nil {
		return nil, Status(err)
	}
	fields, err := st.targetFields(ident, spec.Schema)
	if err != nil {
		return nil, Status(err)
	}
	return &insertTable{p: p, cat: cat, ident: ident, schema: spec.Schema, fields: fields, defCatalog: defCat, defSchema: defSchema}, nil
}

// insertSource runs the INSERT's source query, cast to the table's
// columns.
func (h *Handler) insertSource(ctx context.Context, t *insertTable, st *insertStmt, params arrow.RecordBatch) (*batchSource, error) {
	eng, err := h.sqlEngine()
	if err != nil {
		return nil, err
	}
	q := st.castQuery(t.schema, t.fields)
	d, err := eng.Describe(ctx, "SELECT * FROM ("+st.source+")", h.resolver(ctx, t.p, t.defCatalog, t.defSchema))
	if err != nil {
		return nil, queryStatus(insertError(t, err))
	}
	if d.Schema.NumFields() != len(t.fields) {
		return nil, status.Errorf(codes.InvalidArgument, "INSERT has %s for %d columns of %s", values(d.Schema.NumFields()), len(t.fields), t.ident)
	}
	qctx, cancel := h.statementContext(ctx)
	what := "INSERT into " + t.ident.String()
	rows, err := eng.Query(qctx, q, params, h.resolver(qctx, t.p, t.defCatalog, t.defSchema))
	if err != nil {
		defer cancel()
		if st := h.timedOut(qctx, what); st != nil {
			return nil, st
		}
		return nil, queryStatus(insertError(t, err))
	}
	return &batchSource{schema: rows.Schema(), next: rows.Next, batch: rows.RecordBatch,
		err: func() error {
			if err := rows.Err(); err != nil {
				if st := h.timedOut(qctx, what); st != nil {
					return st
				}
				return queryStatus(insertError(t, err))
			}
			return nil
		},
		close: func() { rows.Close(); cancel() }}, nil
}

// writeInsert writes an INSERT's batches through the one write path
// (txn.Manager.Write) as an append, inside the caller's transaction when
// one is open.
func (h *Handler) writeInsert(ctx context.Context, t *insertTable, txnID []byte, src *batchSource) (int64, error) {
	tx, err := h.ingestTxn(ctx, t.p, txnID)
	if err != nil {
		return 0, err
	}
	res, err := h.opts.Txns.Write(ctx, txn.Write{Table: t.ident, Provider: t.cat.Provider, Txn: tx}, src)
	return res.Rows, err
}

// batchSource adapts a stream of batches (an engine result, or parameter
// batches) to the flight.MessageReader that the ingest path reads.
type batchSource struct {
	schema *arrow.Schema
	next   func() bool
	batch  func() arrow.RecordBatch
	err    func() error
	close  func()
}

var _ flight.MessageReader = (*batchSource)(nil)

// Schema is the batches' schema.
func (b *batchSource) Schema() *arrow.Schema { return b.schema }

// Next advances to the next batch.
func (b *batchSource) Next() bool { return b.next() }

// RecordBatch is the current batch.
func (b *batchSource) RecordBatch() arrow.RecordBatch { return b.batch() }

// Record is the current batch.
//
// Deprecated: use RecordBatch.
func (b *batchSource) Record() arrow.RecordBatch { return b.batch() }

// Err is the error that ended the stream.
func (b *batchSource) Err() error { return b.err() }

// Retain does nothing: the source is owned by its creator.
func (b *batchSource) Retain() {}

// Release does nothing: the source is owned by its creator.
func (b *batchSource) Release() {}

// Read returns the next batch or io.EOF.
func (b *batchSource) Read() (arrow.RecordBatch, error) {
	if b.Next() {
		return b.RecordBatch(), nil
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// Chunk is the current batch as a stream chunk.
func (b *batchSource) Chunk() flight.StreamChunk { return flight.StreamChunk{Data: b.RecordBatch()} }

// LatestFlightDescriptor is nil: the batches come with none.
func (b *batchSource) LatestFlightDescriptor() *flight.FlightDescriptor { return nil }

// LatestAppMetadata is nil: the batches come with none.
func (b *batchSource) LatestAppMetadata() []byte { return nil }
