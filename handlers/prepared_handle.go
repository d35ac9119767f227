package handlers

import (
	"bytes"
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// preparedPrefix marks a flightgw prepared statement handle (version 1).
// It is not ticketPrefix and the MAC covers it, so a query ticket never
// opens as a handle, nor a handle as a ticket, although both are signed
// with the same key.
const preparedPrefix = "fgwp1."

// MaxBoundParamsBytes bounds the bound parameters of a prepared statement
// (one row, Arrow IPC encoded): they travel in every handle and ticket.
const MaxBoundParamsBytes = 1 << 20

// preparedHandle is everything a gateway needs to use a prepared
// statement, so that any replica holding the same key can execute a
// statement another one prepared. Like a ticket it is signed, not
// encrypted, and it does not expire: it only names SQL its owner may run
// anyway, and only its owner can use it.
type preparedHandle struct {
	// ID names the statement: the local cache is keyed by it, so every
	// handle a statement's bindings produce finds the same entry.
	ID  string `json:"id"`
	SQL string `json:"sql"`
	// Owner is the principal that prepared the statement; nobody else
	// can use it.
	Owner string `json:"owner"`
	// TxnID is the transaction id given at creation.
	TxnID []byte `json:"txn,omitempty"`
	// Params is an Arrow IPC stream of the one row of parameters bound by
	// DoPutPreparedStatementQuery, and Bind names that binding ("" in the
	// handle CreatePreparedStatement returns).
	Params []byte `json:"params,omitempty"`
	Bind   string `json:"bind,omitempty"`
}

// signPreparedHandle encodes and signs ph: fgwp1.<payload>.<mac>,
// base64url, HMAC-SHA256 with the ticket key.
func (h *Handler) signPreparedHandle(ph preparedHandle) ([]byte, error) {
	return h.sign(preparedPrefix, ph)
}

// openPreparedHandle verifies a handle's signature and owner. Its errors
// are the tickets': a malformed handle is InvalidArgument, a bad signature
// Unauthenticated, another principal's handle PermissionDenied.
func (h *Handler) openPreparedHandle(raw []byte, owner string) (preparedHandle, error) {
	var ph preparedHandle
	if bytes.HasPrefix(raw, []byte(ticketPrefix)) {
		return ph, status.Error(codes.InvalidArgument, "prepared statement handle: a query ticket is not a prepared statement handle")
	}
	if err := h.verify(raw, preparedPrefix, "prepared statement handle", &ph); err != nil {
		return ph, err
	}
	if ph.ID == "" {
		return ph, status.Error(codes.InvalidArgument, "prepared statement handle: no statement id")
	}
	if ph.Owner != owner {
		return ph, status.Error(codes.PermissionDenied, "prepared statement handle: issued to another principal")
	}
	return ph, nil
}

// buildPrepared describes st.sql for the caller: a query's dataset and
// parameter schemas, or an INSERT's target (prepareInsert).
func (h *Handler) buildPrepared(ctx context.Context, st *prepared) error {
	// Described inside the caller's transaction, when it has one open: a
	// table it is creating exists nowhere else yet. A transaction that
	// cannot be found is left to the execution to report.
	if p, err := principal(ctx); err == nil {
		if tx, err := h.preparedTxn(ctx, p, st.txnID); err == nil {
			ctx = withQueryTxn(ctx, tx)
		}
	}
	if isInsert(st.sql) {
		return h.prepareInsert(ctx, st)
	}
	d, _, _, _, err := h.describe(ctx, st.sql)
	if err != nil {
		return err
	}
	st.dataset, st.params = columnSchema(d.Schema, d.Origins), paramSchema(d.Params, nil)
	return nil
}

// cachePrepared keeps st in the local map under its id. An entry already
// there for the id is returned instead. A session keeps at most
// Options.PreparedPerSession statements: one more created there is
// refused ResourceExhausted, one more rebuilt from a handle is returned
// uncached. When the whole map (MaxPreparedStatements) is full, an entry
// rebuilt from a handle makes room, else the oldest statement of the
// principal holding the most: the statement stays usable, rebuilt from
// its handle at its next use, so one principal filling the map costs the
// others nothing.
func (h *Handler) cachePrepared(st *prepared) (*prepared, error) {
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	if h.sql.prepared == nil {
		h.sql.prepared = map[string]*prepared{}
	}
	if old, ok := h.sql.prepared[st.id]; ok {
		if old.owner == st.owner {
			return old, nil
		}
		return st, nil
	}
	if limit := h.opts.PreparedPerSession; limit > 0 && len(h.sql.sessions.prepared[st.session]) >= limit {
		if st.fromHandle {
			return st, nil
		}
		return nil, status.Errorf(codes.ResourceExhausted,
			"too many open prepared statements in this session (limits.prepared_per_session = %d): close some", limit)
	}
	if len(h.sql.prepared) >= MaxPreparedStatements {
		h.uncacheLocked(h.evictionVictim())
	}
	h.sql.sessions.seq++
	st.seq = h.sql.sessions.seq
	h.sql.prepared[st.id] = st
	h.sql.sessions.addPrepared(st)
	return st, nil
}

// evictionVictim picks the entry that makes room in a full map: one
// rebuilt from a handle, else the oldest of the principal holding the
// most. h.sql.mu must be held.
func (h *Handler) evictionVictim() *prepared {
	held := map[string]int{}
	for _, st := range h.sql.prepared {
		if st.fromHandle {
			return st
		}
		held[st.owner]++
	}
	var victim *prepared
	for _, st := range h.sql.prepared {
		if victim == nil || held[st.owner] > held[victim.owner] || (st.owner == victim.owner && st.seq < victim.seq) {
			victim = st
		}
	}
	return victim
}

// uncacheLocked drops st from the local map and its session. h.sql.mu
// must be held.
func (h *Handler) uncacheLocked(st *prepared) {
	if st == nil || h.sql.prepared[st.id] != st {
		return
	}
	delete(h.sql.prepared, st.id)
	h.sql.sessions.removePrepared(st)
	st.dropBinding()
}

// dropBinding forgets the parameters bound here. h.sql.mu must be held.
func (st *prepared) dropBinding() {
	if st.bound != nil {
		st.bound.Release()
	}
	st.bound, st.boundFrom, st.hasBound = nil, "", false
}

// cached reports whether st is the local map's entry for its id.
// h.sql.mu must be held.
func (h *Handler) cached(st *prepared) bool {
	return h.sql.prepared[st.id] == st
}
