package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/actions"
	"github.com/flightgw/flightgw/txn"
)

// The distributed-commit actions (docs/commit-messages.md). Workers end
// their transactions with PrepareCommit and pass the payloads to one
// coordinator, which commits them once per table with CommitMessages (or
// throws them away with AbortMessages) on any replica sharing the signing
// key. Bodies are JSON: a client builds them in any language with no
// generated code, and the payloads inside are opaque bytes (base64).
const (
	PrepareCommitActionType   = actions.PrepareCommit
	CommitMessagesActionType  = actions.CommitMessages
	AbortMessagesActionType   = actions.AbortMessages
	GetCommitStatusActionType = actions.GetCommitStatus
)

// commitActions are listed by ListActions after the Flight SQL ones.
var commitActions = []*flight.ActionType{
	{Type: PrepareCommitActionType, Description: `Worker: end the caller's transaction (or {"transaction_id"}) without committing; returns per table a signed commit-message payload.`},
	{Type: CommitMessagesActionType, Description: `Coordinator: {"commit_id", "tables": [{"catalog", "schema", "table", "payloads"}]}: check, merge and commit each table once; repeatable with the same commit_id.`},
	{Type: AbortMessagesActionType, Description: `Delete the staged files the payloads name: {"commit_id"?, "tables": [{"catalog", "schema", "table", "payloads"}]}.`},
	{Type: GetCommitStatusActionType, Description: `Has {"commit_id"} landed on {"catalog", "schema", "table"}?`},
	{Type: MaintainTableActionType, Description: `Operator: {"catalog", "schema", "table", "tasks": ["expire_snapshots", "rewrite_data_files", "rewrite_manifests", "compact", "full_compact"], "dry_run"}: run table maintenance (docs/maintenance.md); no tasks runs them all.`},
}

// WithActions returns fs answering the distributed-commit actions too;
// every other action, and every other call, goes to fs.
func (h *Handler) WithActions(fs flight.FlightServer) flight.FlightServer {
	return actionServer{FlightServer: fs, h: h}
}

type actionServer struct {
	flight.FlightServer
	h *Handler
}

// ListActions lists the Flight SQL actions, then the distributed-commit ones.
func (s actionServer) ListActions(e *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	if err := s.FlightServer.ListActions(e, stream); err != nil {
		return err
	}
	for _, a := range commitActions {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return nil
}

// DoAction answers the distributed-commit actions with one JSON result.
func (s actionServer) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	var run func(context.Context, []byte) (any, error)
	switch a.GetType() {
	case PrepareCommitActionType:
		run = s.h.prepareCommit
	case CommitMessagesActionType:
		run = s.h.commitMessages
	case AbortMessagesActionType:
		run = s.h.abortMessages
	case GetCommitStatusActionType:
		run = s.h.commitStatus
	case MaintainTableActionType:
		run = s.h.maintainTable
	default:
		return s.FlightServer.DoAction(a, stream)
	}
	release, err := s.h.admitAction(stream.Context(), a.GetType(), a.GetBody())
	if err != nil {
		s.h.log.Info("action refused", "action", a.GetType(), "bytes", len(a.GetBody()), "err", err)
		return err
	}
	defer release()
	res, err := run(stream.Context(), a.GetBody())
	if err != nil {
		s.h.log.Info("action failed", "action", a.GetType(), "code", Code(err).String(), "err", err)
		return Status(err)
	}
	body, err := json.Marshal(res)
	if err != nil {
		return status.Errorf(codes.Internal, "%s: encode the reply: %v", a.GetType(), err)
	}
	return stream.Send(&flight.Result{Body: body})
}

// decodeBody reads a JSON request body strictly (actions.Decode): an
// unknown, case-folded or repeated key is refused naming it.
func decodeBody(action string, body []byte, into any) error {
	if err := actions.Decode(body, into); err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: request body is not the expected JSON: %v", action, err)
	}
	return nil
}

// The bodies of the actions are codec/actions' types, shared with the Go
// client (package client).
type (
	tableRef        = actions.TableRef
	prepareRequest  = actions.PrepareRequest
	preparedTable   = actions.PreparedTable
	prepareResponse = actions.PrepareResponse
	tableMessages   = actions.TableMessages
	messagesRequest = actions.CommitRequest
	committedTable  = actions.CommittedTable
	commitResponse  = actions.CommitResponse
	abortRequest    = actions.AbortRequest
	abortedTable    = actions.AbortedTable
	abortResponse   = actions.AbortResponse
	statusRequest   = actions.StatusRequest
	statusResponse  = actions.StatusResponse
)

func refOf(t catalogs.TableIdent) tableRef {
	return tableRef{Catalog: t.Catalog, Schema: strings.Join(t.Namespace, "."), Table: t.Name}
}

// resolve finds the table for the caller, in its realm, as ingest does.
func (h *Handler) resolve(ctx context.Context, r tableRef) (Catalog, catalogs.TableIdent, error) {
	cat, _, err := h.catalog(ctx, r.Catalog)
	if err != nil {
		return Catalog{}, catalogs.TableIdent{}, err
	}
	ident := h.tableIdent(cat.Name, r.Schema, r.Table)
	return cat, ident, ident.Validate()
}

// resolveAll resolves the tables of a CommitMessages or AbortMessages.
func (h *Handler) resolveAll(ctx context.Context, tables []tableMessages) ([]txn.MessageTable, error) {
	out := make([]txn.MessageTable, 0, len(tables))
	for _, tm := range tables {
		cat, ident, err := h.resolve(ctx, tm.TableRef)
		if err != nil {
			return nil, err
		}
		out = append(out, txn.MessageTable{Table: ident, Provider: cat.Provider, Payloads: tm.Payloads})
	}
	return out, nil
}

// messageKey is the HMAC key of commit messages (txn.MessageKey).
func (h *Handler) messageKey() []byte { return txn.MessageKey(h.ticketKey()) }

// messages is the commit messages' write policy, built when first used
// (the ticket key may be drawn then).
func (h *Handler) messages() *txn.Messages {
	h.msgOnce.Do(func() { h.msgs = txn.NewMessages(h.opts.Txns, h.messageKey, h.opts.CommitMessageTTL) })
	return h.msgs
}

// prepareCommit answers PrepareCommit: the transaction named, or the one
// open in the caller's session, ends prepared; each table's receipts come
// back sealed.
func (h *Handler) prepareCommit(ctx context.Context, body []byte) (any, error) {
	var req prepareRequest
	if len(body) > 0 {
		if err := decodeBody(PrepareCommitActionType, body, &req); err != nil {
			return nil, err
		}
	}
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	id := req.TransactionID
	if id == "" {
		t, ok := h.opts.Txns.ForSession(p.ID(), sessionKey(ctx))
		if !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: no transaction_id given and no transaction open in this session", PrepareCommitActionType)
		}
		id = t.ID()
	}
	tables, err := h.messages().Prepare(ctx, p.ID(), id, time.Now())
	if err != nil {
		return nil, err
	}
	res := prepareResponse{TransactionID: id, Tables: []preparedTable{}}
	for _, pt := range tables {
		res.Tables = append(res.Tables, preparedTable{TableRef: refOf(pt.Table), Backend: pt.Kind, Rows: pt.Rows, Bytes: pt.Bytes,
			Receipts: pt.Receipts, Payload: pt.Payload})
	}
	h.log.Info("transaction prepared", "txn", id, "principal", p.Name, "tables", len(res.Tables))
	return res, nil
}

// commitMessages answers CommitMessages: every payload checked, then each
// table committed once under the caller's commit id (txn.Messages.Commit).
func (h *Handler) commitMessages(ctx context.Context, body []byte) (any, error) {
	var req messagesRequest
	if err := decodeBody(CommitMessagesActionType, body, &req); err != nil {
		return nil, err
	}
	tables, err := h.resolveAll(ctx, req.Tables)
	if err != nil {
		return nil, err
	}
	done, err := h.messages().Commit(ctx, req.CommitID, tables)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CommitMessagesActionType, err)
	}
	res := commitResponse{CommitID: req.CommitID, Tables: []committedTable{}}
	for _, ct := range done {
		res.Tables = append(res.Tables, committedTable{TableRef: refOf(ct.Table), SnapshotID: ct.Record.Outcome.SnapshotID,
			CommittedAt: ct.Record.Outcome.CommittedAt, Rows: ct.Record.RowCount, Payloads: ct.Payloads})
	}
	if h.opts.AfterCommitMessages != nil {
		h.opts.AfterCommitMessages()
	}
	return res, nil
}

// abortMessages answers AbortMessages: after the checks of CommitMessages,
// the payloads' staged files are deleted if they were never committed
// (txn.Messages.Abort).
func (h *Handler) abortMessages(ctx context.Context, body []byte) (any, error) {
	var req abortRequest
	if err := decodeBody(AbortMessagesActionType, body, &req); err != nil {
		return nil, err
	}
	tables, err := h.resolveAll(ctx, req.Tables)
	if err != nil {
		return nil, err
	}
	done, err := h.messages().Abort(ctx, req.CommitID, tables)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AbortMessagesActionType, err)
	}
	res := abortResponse{Tables: []abortedTable{}}
	for _, at := range done {
		res.Tables = append(res.Tables, abortedTable{TableRef: refOf(at.Table), Receipts: at.Receipts})
	}
	return res, nil
}

// commitStatus answers GetCommitStatus: has a CommitMessages commit id
// landed on the table?
func (h *Handler) commitStatus(ctx context.Context, body []byte) (any, error) {
	var req statusRequest
	if err := decodeBody(GetCommitStatusActionType, body, &req); err != nil {
		return nil, err
	}
	cat, ident, err := h.resolve(ctx, req.TableRef)
	if err != nil {
		return nil, err
	}
	rec, landed, err := h.messages().Status(ctx, cat.Provider, ident, req.CommitID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", GetCommitStatusActionType, err)
	}
	res := statusResponse{TableRef: refOf(ident), CommitID: req.CommitID, Landed: landed}
	if landed {
		at := rec.Outcome.CommittedAt
		res.SnapshotID, res.CommittedAt, res.Rows = rec.Outcome.SnapshotID, &at, rec.RowCount
	}
	return res, nil
}
