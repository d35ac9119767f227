package handlers

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/actions"
	"github.com/flightgw/flightgw/codec/envelope"
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
}

// DefaultCommitMessageTTL is how long a prepared payload can be committed
// when Options leave CommitMessageTTL unset: half of reclaim.min_age's
// default (24h), so that the orphan reclaimer never deletes the files of
// a payload that can still be committed.
const DefaultCommitMessageTTL = 12 * time.Hour

// maxClockSkew is how far in the future a payload's preparation time may
// lie: the replicas' clocks differ by this much at most.
const maxClockSkew = 5 * time.Minute

// maxCommitID bounds a caller's commit id.
const maxCommitID = 128

// messageCommitPrefix marks the commit ids of CommitMessages in the
// table's history, apart from those the gateway draws itself.
const messageCommitPrefix = "msg-"

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
	default:
		return s.FlightServer.DoAction(a, stream)
	}
	release, err := s.h.admitAction(a.GetType(), a.GetBody())
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

// decodeBody reads a JSON request body, refusing unknown fields.
func decodeBody(action string, body []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: request body is not the expected JSON: %v", action, err)
	}
	if dec.More() {
		return status.Errorf(codes.InvalidArgument, "%s: request body: trailing data after the JSON object", action)
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

// identity is a table's identity in an envelope.
func identity(t catalogs.TableIdent) []string {
	return slices.Concat([]string{t.Catalog}, t.Namespace, []string{t.Name})
}

// messageKey is the HMAC key of commit messages: derived from the ticket
// signing key, so that a payload never verifies as a ticket or the
// reverse.
func (h *Handler) messageKey() []byte {
	m := hmac.New(sha256.New, h.ticketKey())
	m.Write([]byte("flightgw commit messages v2"))
	return m.Sum(nil)
}

func (h *Handler) messageTTL() time.Duration {
	if h.opts.CommitMessageTTL > 0 {
		return h.opts.CommitMessageTTL
	}
	return DefaultCommitMessageTTL
}

// checkCommitID refuses a commit id that is empty, long or not printable.
func checkCommitID(action, id string) error {
	if id == "" || len(id) > maxCommitID {
		return status.Errorf(codes.InvalidArgument, "%s: commit_id must be 1 to %d characters, got %d", action, maxCommitID, len(id))
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:-", c)) {
			return status.Errorf(codes.InvalidArgument, "%s: commit_id %q: only letters, digits and . _ : - are allowed", action, id)
		}
	}
	return nil
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
	res := prepareResponse{TransactionID: id, Tables: []preparedTable{}}
	now := time.Now()
	_, err = h.opts.Txns.Prepare(ctx, p.ID(), id, func(s txn.Staged) error {
		pt, err := h.seal(ctx, s, p.ID(), now)
		if err != nil {
			return err
		}
		res.Tables = append(res.Tables, pt)
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.log.Info("transaction prepared", "txn", id, "principal", p.Name, "tables", len(res.Tables))
	return res, nil
}

// seal encodes one table's receipts in a signed envelope: in the
// backend's own payload format when it has one (catalogs.PayloadCodec),
// else as the receipts themselves (iceberg).
func (h *Handler) seal(ctx context.Context, s txn.Staged, user string, at time.Time) (preparedTable, error) {
	cat := h.catalogs[s.Table.Catalog]
	codec, hasCodec := cat.Provider.(catalogs.PayloadCodec)
	if !hasCodec && cat.Type != envelope.KindIceberg {
		why := ""
		if _, ok := cat.Provider.(catalogs.TxnStreamWriter); ok {
			// StarRocks, an upstream Flight SQL server: the receipts name
			// a transaction the backend holds open for this process.
			why = ": its writes are a transaction of the backend itself, open in this gateway process, which no other process can commit (end the transaction with EndTransaction)"
		}
		return preparedTable{}, status.Errorf(codes.FailedPrecondition,
			"%s: table %s: catalog type %q has no commit-message format (iceberg and paimon have)%s", PrepareCommitActionType, s.Table, cat.Type, why)
	}
	pt := preparedTable{TableRef: refOf(s.Table), Backend: cat.Type, Receipts: len(s.Receipts)}
	rs := make([]envelope.Receipt, len(s.Receipts))
	for i, r := range s.Receipts {
		rs[i] = envelope.Receipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
		pt.Rows += r.RowCount
		pt.Bytes += r.ByteCount
	}
	version, payload, err := envelope.ReceiptsVersion, []byte(nil), error(nil)
	if hasCodec {
		version, payload, err = codec.EncodePayload(ctx, s.Table, s.Receipts)
	} else {
		payload, err = envelope.EncodeReceipts(rs)
	}
	if err != nil {
		return pt, status.Errorf(codes.Internal, "table %s: encode receipts: %v", s.Table, err)
	}
	pt.Payload, err = envelope.Seal(envelope.Envelope{Kind: cat.Type, SerializerVersion: version,
		Table: identity(s.Table), CommitUser: user, PreparedAt: at, Payload: payload}, h.messageKey())
	if err != nil {
		return pt, status.Errorf(codes.FailedPrecondition, "table %s: %v", s.Table, err)
	}
	return pt, nil
}

// openMessages checks every payload of every table of the request and
// merges each table's receipts, before anything is committed or deleted:
// one bad payload refuses the whole request. It returns holding the
// tables' message locks (release them with unlock once the commit or the
// deletion is done), so that on this replica no CommitMessages and
// AbortMessages of a table interleave: an abort deleting files between a
// commit's checks and its snapshot would leave the snapshot naming
// deleted files, and a commit between an abort's reference check and its
// deletion would lose them.
func (h *Handler) openMessages(ctx context.Context, action string, tables []tableMessages) (_ []txn.Staged, unlock func(), err error) {
	if len(tables) == 0 {
		return nil, nil, status.Errorf(codes.InvalidArgument, "%s: no tables", action)
	}
	type resolved struct {
		cat   Catalog
		ident catalogs.TableIdent
	}
	res := make([]resolved, 0, len(tables))
	keys := make([]string, 0, len(tables))
	seen := map[string]bool{}
	for _, tm := range tables {
		cat, ident, err := h.resolve(ctx, tm.TableRef)
		if err != nil {
			return nil, nil, err
		}
		if seen[ident.Key()] {
			return nil, nil, status.Errorf(codes.InvalidArgument, "%s: table %s is listed twice (list all its payloads once)", action, ident)
		}
		seen[ident.Key()] = true
		if len(tm.Payloads) == 0 {
			return nil, nil, status.Errorf(codes.InvalidArgument, "%s: table %s: no payloads", action, ident)
		}
		res = append(res, resolved{cat, ident})
		keys = append(keys, ident.Key())
	}
	release := h.msgLocks.lock(keys)
	defer func() {
		if err != nil {
			release()
		}
	}()
	out := make([]txn.Staged, 0, len(tables))
	for k, tm := range tables {
		cat, ident := res[k].cat, res[k].ident
		checker, ok := cat.Provider.(catalogs.ReceiptChecker)
		if !ok {
			return nil, nil, status.Errorf(codes.FailedPrecondition, "%s: table %s: catalog %q cannot check receipts from another process", action, ident, cat.Name)
		}
		s := txn.Staged{Table: ident, Provider: cat.Provider, Mode: txn.Append}
		for i, b := range tm.Payloads {
			rs, err := h.openPayload(ctx, cat, ident, b)
			if k := catalogs.Kind(err); k != nil && k != catalogs.ErrInvalidArgument {
				// The backend failing (its storage down, the table gone)
				// is not the payload's fault: keep its kind.
				return nil, nil, fmt.Errorf("%s: table %s: payload %d: %w", action, ident, i, err)
			}
			if err != nil {
				return nil, nil, status.Errorf(codes.InvalidArgument, "%s: table %s: payload %d: %v", action, ident, i, err)
			}
			s.Receipts = append(s.Receipts, rs...)
		}
		if err := checker.CheckReceipts(ctx, ident, s.Receipts); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", action, err)
		}
		out = append(out, s)
	}
	return out, release, nil
}

// tableLocks are per-table mutexes, held while a table's commit messages
// are checked and then committed or deleted. An entry lives while someone
// holds or waits for it.
type tableLocks struct {
	mu sync.Mutex
	m  map[string]*tableLock
}

type tableLock struct {
	sync.Mutex
	refs int
}

// lock takes the locks of keys, in sorted order so that two requests
// naming the same tables in another order cannot deadlock, and returns
// the function that releases them.
func (l *tableLocks) lock(keys []string) func() {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	held := make([]*tableLock, len(keys))
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*tableLock{}
	}
	for i, k := range keys {
		e := l.m[k]
		if e == nil {
			e = &tableLock{}
			l.m[k] = e
		}
		e.refs++
		held[i] = e
	}
	l.mu.Unlock()
	for _, e := range held {
		e.Lock()
	}
	return func() {
		for _, e := range held {
			e.Unlock()
		}
		l.mu.Lock()
		for i, e := range held {
			if e.refs--; e.refs == 0 {
				delete(l.m, keys[i])
			}
		}
		l.mu.Unlock()
	}
}

// openPayload checks one payload against the table the request names:
// the signature, the backend kind, the table identity, the age; then
// decodes it, with the backend's catalogs.PayloadCodec when it has one.
func (h *Handler) openPayload(ctx context.Context, cat Catalog, ident catalogs.TableIdent, b []byte) ([]catalogs.WriteReceipt, error) {
	e, err := envelope.Open(b, h.messageKey())
	if err != nil {
		return nil, err
	}
	if e.Kind != cat.Type {
		return nil, fmt.Errorf("backend kind %q, but catalog %q is %q", e.Kind, cat.Name, cat.Type)
	}
	if want := identity(ident); !slices.Equal(e.Table, want) {
		return nil, fmt.Errorf("prepared for table %s, not this table", strings.Join(e.Table, "."))
	}
	if ahead := time.Until(e.PreparedAt); ahead > maxClockSkew {
		// It would never expire, and the reclaimer deletes its files by
		// their own age: refuse it rather than commit files that are gone.
		return nil, fmt.Errorf("prepared at %s, %s in the future (more than the %s of clock skew allowed between replicas)",
			e.PreparedAt.Format(time.RFC3339), ahead.Round(time.Second), maxClockSkew)
	}
	if age := time.Since(e.PreparedAt); age > h.messageTTL() {
		return nil, fmt.Errorf("prepared %s ago, commit messages expire after %s (the orphan reclaimer may have deleted its files)",
			age.Round(time.Second), h.messageTTL())
	}
	if codec, ok := cat.Provider.(catalogs.PayloadCodec); ok {
		return codec.DecodePayload(ctx, ident, e.SerializerVersion, e.Payload)
	}
	rs, err := envelope.DecodeReceipts(e.Payload)
	if err != nil {
		return nil, err
	}
	out := make([]catalogs.WriteReceipt, len(rs))
	for i, r := range rs {
		out[i] = catalogs.WriteReceipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	return out, nil
}

// commitMessages answers CommitMessages: every payload checked, then each
// table committed once, through the one commit policy, under the caller's
// commit id.
func (h *Handler) commitMessages(ctx context.Context, body []byte) (any, error) {
	var req messagesRequest
	if err := decodeBody(CommitMessagesActionType, body, &req); err != nil {
		return nil, err
	}
	if err := checkCommitID(CommitMessagesActionType, req.CommitID); err != nil {
		return nil, err
	}
	staged, unlock, err := h.openMessages(ctx, CommitMessagesActionType, req.Tables)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := refuseReplay(ctx, req.CommitID, staged); err != nil {
		return nil, err
	}
	outs, err := h.opts.Txns.CommitReceipts(ctx, messageCommitPrefix+req.CommitID, staged)
	res := commitResponse{CommitID: req.CommitID, Tables: []committedTable{}}
	for i, out := range outs {
		ct := committedTable{TableRef: refOf(staged[i].Table), SnapshotID: out.SnapshotID, CommittedAt: out.CommittedAt,
			Payloads: len(req.Tables[i].Payloads)}
		for _, r := range staged[i].Receipts {
			ct.Rows += r.RowCount
		}
		res.Tables = append(res.Tables, ct)
	}
	if err != nil {
		done := make([]string, len(outs))
		for i := range outs {
			done[i] = staged[i].Table.String()
		}
		return nil, fmt.Errorf("%s %s: committed: %s; the rest did not (retry with the same commit_id, or GetCommitStatus): %w",
			CommitMessagesActionType, req.CommitID, listOrNone(done), err)
	}
	h.log.Info("commit messages committed", "commit_id", req.CommitID, "tables", len(staged))
	if h.opts.AfterCommitMessages != nil {
		h.opts.AfterCommitMessages()
	}
	return res, nil
}

// refuseReplay refuses payloads already committed under another commit
// id: a second commit of the same files would add every row twice (a
// backend does not always refuse a file it already has). A table on which
// commitID has landed is this commit's repeat, answered with the first
// snapshot, and is not checked.
func refuseReplay(ctx context.Context, commitID string, staged []txn.Staged) error {
	for _, s := range staged {
		rc, ok := s.Provider.(catalogs.ReferenceChecker)
		if !ok {
			return status.Errorf(codes.FailedPrecondition, "%s: catalog %q cannot tell whether the files of table %s are already committed: nothing committed",
				CommitMessagesActionType, s.Table.Catalog, s.Table)
		}
		if _, ok := s.Provider.(catalogs.IdempotentCommitter); ok {
			_, landed, err := findCommit(ctx, s.Provider, s.Table, commitID)
			if err != nil {
				return err
			}
			if landed {
				continue
			}
		}
		if err := rc.CheckUnreferenced(ctx, s.Table, s.Receipts); err != nil {
			return fmt.Errorf("%s %s: payloads already committed (under another commit id): nothing committed: %w", CommitMessagesActionType, commitID, err)
		}
	}
	return nil
}

// abortMessages answers AbortMessages: after the checks of CommitMessages
// (and, given a commit id, that it has not landed), the payloads' staged
// files are deleted.
func (h *Handler) abortMessages(ctx context.Context, body []byte) (any, error) {
	var req abortRequest
	if err := decodeBody(AbortMessagesActionType, body, &req); err != nil {
		return nil, err
	}
	if req.CommitID != "" {
		if err := checkCommitID(AbortMessagesActionType, req.CommitID); err != nil {
			return nil, err
		}
	}
	staged, unlock, err := h.openMessages(ctx, AbortMessagesActionType, req.Tables)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if req.CommitID != "" {
		for _, s := range staged {
			rec, landed, err := findCommit(ctx, s.Provider, s.Table, req.CommitID)
			if err != nil {
				return nil, err
			}
			if landed {
				return nil, status.Errorf(codes.FailedPrecondition, "%s: commit %s landed on table %s (snapshot %d): its files are live, nothing deleted",
					AbortMessagesActionType, req.CommitID, s.Table, rec.Outcome.SnapshotID)
			}
		}
	}
	// Whatever the commit id says, a file a snapshot references is live:
	// the payload may have been committed under another id.
	for _, s := range staged {
		rc, ok := s.Provider.(catalogs.ReferenceChecker)
		if !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: catalog %q cannot tell whether the files of table %s are committed: nothing deleted",
				AbortMessagesActionType, s.Table.Catalog, s.Table)
		}
		if err := rc.CheckUnreferenced(ctx, s.Table, s.Receipts); err != nil {
			return nil, fmt.Errorf("%s: nothing deleted: %w", AbortMessagesActionType, err)
		}
	}
	if err := h.opts.Txns.DiscardReceipts(ctx, staged); err != nil {
		return nil, err
	}
	res := abortResponse{Tables: []abortedTable{}}
	for _, s := range staged {
		res.Tables = append(res.Tables, abortedTable{TableRef: refOf(s.Table), Receipts: len(s.Receipts)})
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
	if err := checkCommitID(GetCommitStatusActionType, req.CommitID); err != nil {
		return nil, err
	}
	cat, ident, err := h.resolve(ctx, req.TableRef)
	if err != nil {
		return nil, err
	}
	rec, landed, err := findCommit(ctx, cat.Provider, ident, req.CommitID)
	if err != nil {
		return nil, err
	}
	res := statusResponse{TableRef: refOf(ident), CommitID: req.CommitID, Landed: landed}
	if landed {
		at := rec.Outcome.CommittedAt
		res.SnapshotID, res.CommittedAt, res.Rows = rec.Outcome.SnapshotID, &at, rec.RowCount
	}
	return res, nil
}

// findCommit looks a CommitMessages commit id up on a table.
func findCommit(ctx context.Context, p catalogs.Provider, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	ic, ok := p.(catalogs.IdempotentCommitter)
	if !ok {
		return catalogs.CommitRecord{}, false, status.Errorf(codes.FailedPrecondition, "table %s: catalog %q does not record commit ids", t, t.Catalog)
	}
	return ic.FindCommit(ctx, t, messageCommitPrefix+commitID)
}

// listOrNone joins names, or says none.
func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
