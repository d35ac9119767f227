package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/txn"
)

// ingestPlan is what the table definition options and the table's current
// state decide before any data is written.
type ingestPlan struct {
	table     catalogs.TableIdent
	provider  catalogs.Provider
	created   bool // the ingest created the table (dropped again on failure)
	overwrite bool // the ingest replaces the table's data
}

// DoPutCommandStatementIngest answers CommandStatementIngest (ADBC bulk
// ingest). Each incoming batch goes to WriteBatch as it arrives. Without a
// transaction the ingest commits when the stream ends; inside one, its
// receipts join the transaction.
func (h *Handler) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	n, err := h.ingest(ctx, cmd, rdr)
	if err != nil {
		h.log.Info("ingest failed", "catalog", cmd.GetCatalog(), "schema", cmd.GetSchema(), "table", cmd.GetTable(),
			"rows", n, "code", Code(err).String(), "err", err)
	}
	return n, Status(err)
}

func (h *Handler) ingest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	cat, p, err := h.catalog(ctx, cmd.GetCatalog())
	if err != nil {
		return 0, err
	}
	ident := h.tableIdent(cat.Name, cmd.GetSchema(), cmd.GetTable())
	if cmd.GetTemporary() {
		return 0, status.Errorf(codes.Unimplemented, "ingest into %s: temporary tables are not supported", ident)
	}
	if err := ident.Validate(); err != nil {
		return 0, err
	}
	tx, err := h.ingestTxn(ctx, p, cmd.GetTransactionId())
	if err != nil {
		return 0, err
	}
	key := idempotencyKey(ctx, cmd)
	if key != "" {
		if tx != nil {
			return 0, status.Errorf(codes.InvalidArgument,
				"ingest into %s: option %s cannot be used inside a transaction (the transaction commit is the unit of retry)", ident, IdempotencyKeyOption)
		}
		ic, ok := cat.Provider.(catalogs.IdempotentCommitter)
		if !ok {
			return 0, status.Errorf(codes.InvalidArgument, "ingest into %s: catalog %q does not record idempotency keys", ident, cat.Name)
		}
		rec, found, err := ic.FindCommit(ctx, ident, key)
		if err != nil && !errors.Is(err, catalogs.ErrNotFound) {
			return 0, err
		}
		if found {
			// The ingest already landed: consume the retried upload and
			// write nothing.
			for rdr.Next() {
			}
			h.log.Info("ingest retry already committed", "table", ident.String(), "snapshot", rec.Outcome.SnapshotID)
			return int64(rec.RowCount), nil
		}
	}

	schema := rdr.Schema()
	if schema == nil {
		return 0, streamError(ctx, ident, rdr.Err())
	}
	plan, err := h.planIngest(ctx, cat, ident, cmd.GetTableDefinitionOptions(), schema, tx != nil)
	if err != nil {
		return 0, err
	}

	receipts, rows, err := writeStream(ctx, plan, rdr)
	if err != nil {
		h.abandon(ctx, plan, receipts, tx == nil)
		return 0, err
	}
	if tx != nil {
		mode := txn.Append
		if plan.overwrite {
			mode = txn.Overwrite
		}
		superseded, err := tx.Add(ident, plan.provider, mode, receipts)
		if err != nil {
			h.abandon(ctx, plan, receipts, false)
			return 0, err
		}
		if err := txn.Discard(context.WithoutCancel(ctx), plan.provider, ident, superseded); err != nil {
			h.log.Warn("discard superseded receipts", "table", ident.String(), "err", err)
		}
		return rows, nil
	}
	if key == "" {
		key = "ingest-" + randomID()
	}
	if err := h.commitIngest(ctx, plan, key, receipts); err != nil {
		return 0, err
	}
	return rows, nil
}

// idempotencyKey reads the client's idempotency key: the ingest option,
// else the call header (ADBC drivers cannot set ingest options but can set
// call headers: adbc.flight.sql.rpc.call_header.x-flightgw-idempotency-key).
func idempotencyKey(ctx context.Context, cmd flightsql.StatementIngest) string {
	if k := cmd.GetOptions()[IdempotencyKeyOption]; k != "" {
		return k
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(IdempotencyKeyHeader); len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// ingestTxn finds the transaction the ingest writes in: the one named in
// the command, else the one open in the caller's session, else none
// (auto-commit).
func (h *Handler) ingestTxn(ctx context.Context, p auth.Principal, id []byte) (*txn.Txn, error) {
	if len(id) > 0 {
		return h.opts.Txns.Get(p.ID(), string(id))
	}
	if t, ok := h.opts.Txns.ForSession(p.ID(), sessionKey(ctx)); ok {
		return t, nil
	}
	return nil, nil
}

// planIngest applies the table definition options: create, append, replace
// or create-append. Table creation is not transactional: inside a
// transaction a created table stays even when the transaction rolls back.
func (h *Handler) planIngest(ctx context.Context, cat Catalog, ident catalogs.TableIdent, opts *flightsql.TableDefinitionOptions,
	schema *arrow.Schema, inTxn bool) (ingestPlan, error) {
	plan := ingestPlan{table: ident, provider: cat.Provider}
	ifNotExist := flightsql.TableDefinitionOptionsTableNotExistOptionFail
	ifExists := flightsql.TableDefinitionOptionsTableExistsOptionAppend
	if opts != nil {
		if opts.IfNotExist != flightsql.TableDefinitionOptionsTableNotExistOptionUnspecified {
			ifNotExist = opts.IfNotExist
		}
		if opts.IfExists != flightsql.TableDefinitionOptionsTableExistsOptionUnspecified {
			ifExists = opts.IfExists
		}
	}
	spec, err := cat.Provider.GetTableSpec(ctx, ident)
	exists := err == nil
	if err != nil && !errors.Is(err, catalogs.ErrNotFound) {
		return plan, err
	}
	tm, canCreate := cat.Provider.(catalogs.TableManager)
	create := func() error {
		if !canCreate {
			return status.Errorf(codes.InvalidArgument, "ingest into %s: catalog %q cannot create tables", ident, cat.Name)
		}
		if _, err := tm.CreateTable(ctx, ident, schema); err != nil {
			return err
		}
		plan.created = !inTxn
		return nil
	}
	switch {
	case !exists && ifNotExist == flightsql.TableDefinitionOptionsTableNotExistOptionCreate:
		return plan, create()
	case !exists:
		return plan, status.Errorf(codes.NotFound, "ingest into %s: table does not exist (use mode create or create_append)", ident)
	case ifExists == flightsql.TableDefinitionOptionsTableExistsOptionFail:
		return plan, status.Errorf(codes.AlreadyExists, "ingest into %s: table already exists (use mode append or replace)", ident)
	case ifExists == flightsql.TableDefinitionOptionsTableExistsOptionReplace:
		if _, ok := cat.Provider.(catalogs.Overwriter); ok && sameColumns(spec.Schema, schema) {
			// Same columns: replace the data atomically at commit.
			plan.overwrite = true
			return plan, nil
		}
		// Different columns: the table is dropped and created again with
		// the new schema. This is not atomic: readers can see the empty
		// table until the ingest commits.
		if !canCreate {
			return plan, status.Errorf(codes.InvalidArgument, "ingest into %s: catalog %q cannot replace tables", ident, cat.Name)
		}
		if err := tm.DropTable(ctx, ident); err != nil && !errors.Is(err, catalogs.ErrNotFound) {
			return plan, err
		}
		return plan, create()
	default:
		return plan, nil
	}
}

// sameColumns reports whether two schemas have the same column names and
// types in the same order (nullability aside).
func sameColumns(a, b *arrow.Schema) bool {
	if a == nil || b == nil || a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

// writeStream sends every incoming batch to the backend as it arrives:
// through a catalogs.WriteStream when the backend has one (a few large
// files per upload), else through WriteBatch (a receipt per batch). It
// returns the receipts written so far even on error, for the caller to
// discard.
func writeStream(ctx context.Context, plan ingestPlan, rdr flight.MessageReader) ([]catalogs.WriteReceipt, int64, error) {
	if sw, ok := plan.provider.(catalogs.StreamWriter); ok {
		return writeThroughStream(ctx, sw, plan, rdr)
	}
	var (
		receipts []catalogs.WriteReceipt
		rows     int64
	)
	for rdr.Next() {
		batch := rdr.RecordBatch()
		if batch.NumRows() == 0 {
			continue
		}
		r, err := plan.provider.WriteBatch(ctx, plan.table, batch)
		if err != nil {
			return receipts, 0, err
		}
		receipts = append(receipts, r)
		rows += batch.NumRows()
	}
	if err := readEnd(ctx, plan.table, rdr); err != nil {
		return receipts, 0, err
	}
	return receipts, rows, nil
}

func writeThroughStream(ctx context.Context, sw catalogs.StreamWriter, plan ingestPlan, rdr flight.MessageReader) ([]catalogs.WriteReceipt, int64, error) {
	ws, err := sw.OpenStream(ctx, plan.table)
	if err != nil {
		return nil, 0, err
	}
	abort := func(err error) ([]catalogs.WriteReceipt, int64, error) {
		if aerr := ws.Abort(context.WithoutCancel(ctx)); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return nil, 0, err
	}
	var rows int64
	for rdr.Next() {
		batch := rdr.RecordBatch()
		if batch.NumRows() == 0 {
			continue
		}
		if err := ws.Write(ctx, batch); err != nil {
			return abort(err)
		}
		rows += batch.NumRows()
	}
	if err := readEnd(ctx, plan.table, rdr); err != nil {
		return abort(err)
	}
	receipts, err := ws.Close(ctx)
	if err != nil {
		return nil, 0, err
	}
	return receipts, rows, nil
}

// readEnd reports why the client's stream ended, if not cleanly.
func readEnd(ctx context.Context, table catalogs.TableIdent, rdr flight.MessageReader) error {
	if err := rdr.Err(); err != nil {
		return streamError(ctx, table, err)
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return nil
}

// streamError classifies a failure to read the client's Arrow stream: a
// client that went away, or bytes that are not Arrow IPC.
func streamError(ctx context.Context, table catalogs.TableIdent, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return status.Errorf(s.Code(), "ingest into %s: reading the upload: %s", table, s.Message())
	}
	if err == nil {
		err = errors.New("stream ended before its schema")
	}
	return status.Errorf(codes.InvalidArgument, "ingest into %s: malformed Arrow IPC stream: %v", table, err)
}

// commitIngest commits an auto-commit ingest under commitID. When the
// commit's outcome is unknown (the error came after the backend may have
// applied it), the commit id tells: the staged files are discarded only
// when the commit certainly did not land.
func (h *Handler) commitIngest(ctx context.Context, plan ingestPlan, commitID string, receipts []catalogs.WriteReceipt) error {
	var err error
	switch {
	case plan.overwrite:
		_, err = plan.provider.(catalogs.Overwriter).CommitOverwrite(ctx, plan.table, commitID, receipts)
	case len(receipts) == 0:
		return nil
	default:
		if ic, ok := plan.provider.(catalogs.IdempotentCommitter); ok {
			_, err = ic.CommitOnce(ctx, plan.table, commitID, receipts)
		} else {
			_, err = plan.provider.Commit(ctx, plan.table, receipts)
		}
	}
	if err == nil {
		return nil
	}
	if ic, ok := plan.provider.(catalogs.IdempotentCommitter); ok {
		_, landed, ferr := ic.FindCommit(context.WithoutCancel(ctx), plan.table, commitID)
		if ferr == nil && landed {
			return nil
		}
		if ferr != nil {
			h.log.Warn("commit outcome unknown; staged files kept", "table", plan.table.String(), "commit_id", commitID, "err", ferr)
			return err
		}
	}
	h.abandon(ctx, plan, receipts, true)
	return err
}

// abandon discards what a failed ingest staged and drops a table that it
// created itself.
func (h *Handler) abandon(ctx context.Context, plan ingestPlan, receipts []catalogs.WriteReceipt, dropCreated bool) {
	ctx = context.WithoutCancel(ctx)
	if err := txn.Discard(ctx, plan.provider, plan.table, receipts); err != nil {
		h.log.Warn("discard staged files", "table", plan.table.String(), "receipts", len(receipts), "err", err)
	}
	if dropCreated && plan.created {
		if tm, ok := plan.provider.(catalogs.TableManager); ok {
			if err := tm.DropTable(ctx, plan.table); err != nil {
				h.log.Warn("drop table created by failed ingest", "table", plan.table.String(), "err", err)
			}
		}
	}
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
