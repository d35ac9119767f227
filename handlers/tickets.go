package handlers

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/engine"
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
	// Push, when set, is the query as GetFlightInfo found it goes whole
	// to its tables' backend: DoGet hands it to the backend without the
	// engine parsing, binding and preparing it again.
	Push *pushTicket `json:"push,omitempty"`
}

// pushTicket is an engine.Description.Pushed in a ticket. It carries no
// authority: DoGet resolves its tables for the caller again, as the
// engine would (engine.QueryPushed), and the signature only keeps the
// text and schema the gateway described.
type pushTicket struct {
	Fragments []string              `json:"frag"`
	Tables    []catalogs.TableIdent `json:"tables"`
	// Schema is the result's Arrow IPC schema (flight.SerializeSchema).
	Schema  []byte          `json:"schema"`
	Origins []engine.Origin `json:"origins,omitempty"`
}

// maxPushTicket bounds a pushTicket's encoding: a wider result (its
// schema grows with every column) is described again by DoGet instead,
// so that a ticket stays small enough for any client to hold and send.
const maxPushTicket = 4 << 10

// newPushTicket is d's pushed query for a ticket; nil when d is not
// pushed whole or would make the ticket too large.
func newPushTicket(d *engine.Description, mem memory.Allocator) *pushTicket {
	if d.Pushed == nil {
		return nil
	}
	pt := &pushTicket{Fragments: d.Pushed.Fragments, Tables: d.Pushed.Tables,
		Schema: flight.SerializeSchema(d.Pushed.Schema, mem)}
	if slices.ContainsFunc(d.Origins, engine.Origin.Known) {
		pt.Origins = d.Origins // else none: no column is a table's
	}
	if b, err := json.Marshal(pt); err != nil || len(b) > maxPushTicket {
		return nil
	}
	return pt
}

// query is the pushed query a ticket carries.
func (pt *pushTicket) query(mem memory.Allocator) (catalogs.PushedQuery, error) {
	schema, err := flight.DeserializeSchema(pt.Schema, mem)
	if err != nil {
		return catalogs.PushedQuery{}, status.Errorf(codes.InvalidArgument, "ticket: pushed query schema: %v", err)
	}
	return catalogs.PushedQuery{Fragments: pt.Fragments, Tables: pt.Tables, Schema: schema}, nil
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
func (h *Handler) signTicket(t ticket) ([]byte, error) { return h.sign(ticketPrefix, t) }

// sign encodes v as JSON and signs it: <prefix><payload>.<mac>, base64url,
// HMAC-SHA256 with the ticket key over the prefix and payload.
func (h *Handler) sign(prefix string, v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	enc := base64.RawURLEncoding
	body := prefix + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, h.ticketKey())
	mac.Write([]byte(body))
	return []byte(body + "." + enc.EncodeToString(mac.Sum(nil))), nil
}

// verify checks the signature of raw, made by sign with prefix, and
// decodes its payload into v; what names the token in errors. A malformed
// token is InvalidArgument, a bad signature Unauthenticated.
func (h *Handler) verify(raw []byte, prefix, what string, v any) error {
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		return status.Errorf(codes.InvalidArgument, "%s: not a flightgw %s", what, what)
	}
	dot := bytes.LastIndexByte(raw, '.')
	if dot <= len(prefix) {
		return status.Errorf(codes.InvalidArgument, "%s: malformed", what)
	}
	enc := base64.RawURLEncoding
	if _, err := enc.DecodeString(string(raw[dot+1:])); err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: malformed signature", what)
	}
	mac := hmac.New(sha256.New, h.ticketKey())
	mac.Write(raw[:dot])
	// The encoded MACs are compared: the decoder skips newlines, and a
	// token has one spelling.
	if !hmac.Equal(raw[dot+1:], []byte(enc.EncodeToString(mac.Sum(nil)))) {
		return status.Errorf(codes.Unauthenticated, "%s: bad signature (forged, or signed with another key)", what)
	}
	payload, err := enc.DecodeString(string(raw[len(prefix):dot]))
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: malformed payload", what)
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return status.Errorf(codes.InvalidArgument, "%s: malformed payload: %v", what, err)
	}
	return nil
}

// openTicket verifies a ticket's signature, expiry and owner.
func (h *Handler) openTicket(raw []byte, owner string, now time.Time) (ticket, error) {
	var t ticket
	if bytes.HasPrefix(raw, []byte(preparedPrefix)) {
		return t, status.Error(codes.InvalidArgument, "ticket: a prepared statement handle is not a query ticket")
	}
	if err := h.verify(raw, ticketPrefix, "ticket", &t); err != nil {
		return t, err
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
