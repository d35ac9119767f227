package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/txn"
)

// DoPutCommandStatementIngest answers CommandStatementIngest (ADBC bulk
// ingest): the upload goes to the one write path (txn.Manager.Write),
// which commits it when the stream ends, or joins the caller's
// transaction.
func (h *Handler) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	start := time.Now()
	ident, res, err := h.ingest(ctx, cmd, rdr)
	// The table as resolved (the default catalog and schema filled in),
	// not the command's fields, which a client may leave empty.
	table := ident.String()
	if ident.Name == "" {
		table = cmd.GetTable()
	}
	switch {
	case err != nil:
		h.log.Info("ingest failed", "table", table, "rows", res.Rows, "code", Code(err).String(), "err", err)
	case !res.Repeated:
		attrs := []any{"table", table, "rows", res.Rows, "bytes", res.Bytes, "duration", time.Since(start)}
		if res.Snapshot != 0 {
			attrs = append(attrs, "snapshot", res.Snapshot)
		} else {
			attrs = append(attrs, "staged", "in a transaction") // its commit logs the snapshot
		}
		h.log.Info("ingest finished", attrs...)
	}
	return res.Rows, Status(err)
}

// maxIdempotencyKey bounds a client's idempotency key.
const maxIdempotencyKey = 256

func (h *Handler) ingest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (catalogs.TableIdent, txn.Result, error) {
	var none txn.Result
	cat, p, err := h.catalog(ctx, cmd.GetCatalog())
	if err != nil {
		return catalogs.TableIdent{}, none, err
	}
	ident := h.tableIdent(cat.Name, cmd.GetSchema(), cmd.GetTable())
	if cmd.GetTemporary() {
		return ident, none, status.Errorf(codes.Unimplemented, "ingest into %s: temporary tables are not supported", ident)
	}
	if err := ident.Validate(); err != nil {
		return ident, none, err
	}
	tx, err := h.ingestTxn(ctx, p, cmd.GetTransactionId())
	if err != nil {
		return ident, none, err
	}
	w := txn.Write{Table: ident, Provider: cat.Provider, Txn: tx}
	w.CreateIfMissing, w.IfExists = ingestMode(cmd.GetTableDefinitionOptions())
	w.TableOptions = tableOptions(cmd.GetOptions())
	if key := idempotencyKey(ctx, cmd); key != "" {
		if len(key) > maxIdempotencyKey {
			return ident, none, status.Errorf(codes.InvalidArgument, "ingest into %s: option %s is longer than %d bytes", ident, IdempotencyKeyOption, maxIdempotencyKey)
		}
		if tx != nil {
			return ident, none, status.Errorf(codes.InvalidArgument,
				"ingest into %s: option %s cannot be used inside a transaction (the transaction commit is the unit of retry)", ident, IdempotencyKeyOption)
		}
		w.CommitID, w.Idempotent = txn.IdempotencyCommitID(p.Realm, p.ID(), key), true
	}
	res, err := h.opts.Txns.Write(ctx, w, upload{MessageReader: rdr, ctx: ctx, table: ident})
	if res.Repeated && err == nil {
		h.log.Info("ingest retry already committed", "table", ident.String(), "rows", res.Rows)
	}
	return ident, res, err
}

// tableOptions are the ingest options a backend applies to a table the
// ingest creates (catalogs.TableManager.CreateTable: a partition spec, a
// bucket count, a primary key...), or refuses: every option but the
// gateway's own flightgw.* ones.
func tableOptions(opts map[string]string) map[string]string {
	var out map[string]string
	for k, v := range opts {
		if strings.HasPrefix(k, "flightgw.") {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// ingestMode reads the table definition options: by default a missing
// table is an error and an existing one is appended to.
func ingestMode(opts *flightsql.TableDefinitionOptions) (create bool, exists txn.IfExists) {
	if opts == nil {
		return false, txn.ExistsAppend
	}
	create = opts.IfNotExist == flightsql.TableDefinitionOptionsTableNotExistOptionCreate
	switch opts.IfExists {
	case flightsql.TableDefinitionOptionsTableExistsOptionFail:
		exists = txn.ExistsFail
	case flightsql.TableDefinitionOptionsTableExistsOptionReplace:
		exists = txn.ExistsReplace
	default:
		exists = txn.ExistsAppend
	}
	return create, exists
}

// upload is the client's Arrow stream as a txn.Source whose error is
// already a status for the client.
type upload struct {
	flight.MessageReader
	ctx   context.Context
	table catalogs.TableIdent
}

// Err classifies why the stream ended, if not cleanly.
func (u upload) Err() error {
	if err := u.MessageReader.Err(); err != nil {
		return streamError(u.ctx, u.table, err)
	}
	if u.MessageReader.Schema() == nil {
		return streamError(u.ctx, u.table, nil)
	}
	return nil
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

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
