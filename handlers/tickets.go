package handlers

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultTicketTTL is how long a query ticket stays valid when Options
// leave TicketTTL unset.
const DefaultTicketTTL = 10 * time.Minute

// ticketPrefix marks a flightgw query ticket (version 1).
const ticketPrefix = "fgw1."

// ticket is everything DoGet needs to run a query, so that any replica
// holding the same key can serve it. It is signed, not encrypted: it holds
// the query text, which its holder wrote.
type ticket struct {
	// ID names the query for CancelFlightInfo.
	ID  string `json:"id"`
	SQL string `json:"sql"`
	// Params is an Arrow IPC stream of one row of parameter values.
	Params []byte `json:"params,omitempty"`
	// Catalog and Schema are the caller's defaults when the ticket was
	// issued.
	Catalog string `json:"catalog,omitempty"`
	Schema  string `json:"schema,omitempty"`
	// Owner is the principal the ticket was issued to; nobody else can
	// redeem it.
	Owner string `json:"owner"`
	// Expires is a Unix time in seconds.
	Expires int64 `json:"exp"`
	// Parts, when set, splits the query: this ticket reads part Part of
	// Parts, at table snapshot Snapshot (engine.Part).
	Part     int   `json:"part,omitempty"`
	Parts    int   `json:"parts,omitempty"`
	Snapshot int64 `json:"snap,omitempty"`
	// TxnID is the transaction the query was issued in: while it is open
	// the query reads its uncommitted writes too.
	TxnID string `json:"txn,omitempty"`
}

// ticketKey returns the signing key: the configured one, else a random key
// drawn once (tickets then only work on this gateway process).
func (h *Handler) ticketKey() []byte {
	h.sql.keyOnce.Do(func() {
		if len(h.opts.TicketKey) > 0 {
			h.sql.key = h.opts.TicketKey
			return
		}
		h.sql.key = make([]byte, 32)
		_, _ = rand.Read(h.sql.key)
		h.log.Warn("no tickets.signing_key configured: query tickets are only valid on this gateway process")
	})
	return h.sql.key
}

func (h *Handler) ticketTTL() time.Duration {
	if h.opts.TicketTTL > 0 {
		return h.opts.TicketTTL
	}
	return DefaultTicketTTL
}

// signTicket encodes and signs t: fgw1.<payload>.<mac>, base64url.
func (h *Handler) signTicket(t ticket) ([]byte, error) {
	payload, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	enc := base64.RawURLEncoding
	body := ticketPrefix + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, h.ticketKey())
	mac.Write([]byte(body))
	return []byte(body + "." + enc.EncodeToString(mac.Sum(nil))), nil
}

// openTicket verifies a ticket's signature, expiry and owner.
func (h *Handler) openTicket(raw []byte, owner string, now time.Time) (ticket, error) {
	var t ticket
	if !bytes.HasPrefix(raw, []byte(ticketPrefix)) {
		return t, status.Error(codes.InvalidArgument, "ticket: not a flightgw query ticket")
	}
	dot := bytes.LastIndexByte(raw, '.')
	if dot <= len(ticketPrefix) {
		return t, status.Error(codes.InvalidArgument, "ticket: malformed")
	}
	enc := base64.RawURLEncoding
	sig, err := enc.DecodeString(string(raw[dot+1:]))
	if err != nil {
		return t, status.Error(codes.InvalidArgument, "ticket: malformed signature")
	}
	mac := hmac.New(sha256.New, h.ticketKey())
	mac.Write(raw[:dot])
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return t, status.Error(codes.Unauthenticated, "ticket: bad signature (forged, or signed with another key)")
	}
	payload, err := enc.DecodeString(string(raw[len(ticketPrefix):dot]))
	if err != nil {
		return t, status.Error(codes.InvalidArgument, "ticket: malformed payload")
	}
	if err := json.Unmarshal(payload, &t); err != nil {
		return t, status.Errorf(codes.InvalidArgument, "ticket: malformed payload: %v", err)
	}
	if now.Unix() > t.Expires {
		return t, status.Errorf(codes.Unauthenticated, "ticket: expired at %s; call GetFlightInfo again",
			time.Unix(t.Expires, 0).UTC().Format(time.RFC3339))
	}
	if t.Owner != owner {
		return t, status.Error(codes.PermissionDenied, "ticket: issued to another principal")
	}
	return t, nil
}

// encodeParams serializes one row of parameters for a ticket.
func encodeParams(rec arrow.RecordBatch) ([]byte, error) {
	if rec == nil {
		return nil, nil
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeParams reads the parameters of a ticket; nil for none.
func decodeParams(b []byte, alloc memory.Allocator) (arrow.RecordBatch, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(alloc))
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ticket: parameters: %v", err)
	}
	defer r.Release()
	if !r.Next() {
		return nil, status.Error(codes.InvalidArgument, "ticket: parameters: no batch")
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, nil
}
