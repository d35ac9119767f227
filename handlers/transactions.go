package handlers

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// BeginTransaction answers ActionBeginTransactionRequest: an unguessable id
// owned by the caller and bound to its session.
func (h *Handler) BeginTransaction(ctx context.Context, _ flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	id, err := h.newTxnID()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "begin transaction: %v", err)
	}
	t, err := h.opts.Txns.BeginWithID(id, p.ID(), sessionKey(ctx))
	if err != nil {
		return nil, Status(err)
	}
	h.log.Debug("transaction begun", "txn", t.ID(), "principal", p.Name, "realm", p.Realm)
	return []byte(t.ID()), nil
}

// EndTransaction answers ActionEndTransactionRequest: COMMIT commits every
// table the transaction staged; ROLLBACK discards them.
func (h *Handler) EndTransaction(ctx context.Context, req flightsql.ActionEndTransactionRequest) error {
	p, err := principal(ctx)
	if err != nil {
		return err
	}
	id := string(req.GetTransactionId())
	if id == "" {
		return status.Error(codes.InvalidArgument, "end transaction: transaction_id is empty")
	}
	switch req.GetAction() {
	case flightsql.EndTransactionCommit:
		err = h.opts.Txns.Commit(ctx, p.ID(), id)
	case flightsql.EndTransactionRollback:
		err = h.opts.Txns.Rollback(ctx, p.ID(), id)
	default:
		return status.Errorf(codes.InvalidArgument, "end transaction: action must be COMMIT or ROLLBACK, got %v", req.GetAction())
	}
	if err != nil {
		h.log.Info("end transaction failed", "action", req.GetAction().String(), "code", Code(err).String(), "err", err)
	}
	return Status(err)
}

// BeginSavepoint answers ActionBeginSavepointRequest: not supported.
func (h *Handler) BeginSavepoint(context.Context, flightsql.ActionBeginSavepointRequest) ([]byte, error) {
	return nil, status.Error(codes.Unimplemented, "savepoints are not supported: table formats commit whole snapshots; use separate transactions")
}

// EndSavepoint answers ActionEndSavepointRequest: not supported.
func (h *Handler) EndSavepoint(context.Context, flightsql.ActionEndSavepointRequest) error {
	return status.Error(codes.Unimplemented, "savepoints are not supported: table formats commit whole snapshots; use separate transactions")
}
