package handlers

import (
	"context"
	"net"

	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// SessionCookie is the Flight session cookie (the name arrow-go's session
// middleware uses). A client that keeps cookies is identified by it.
const SessionCookie = "arrow_flight_session_id"

// sessionKey identifies the caller's session: the Flight session cookie
// when the client sends one, otherwise the client's connection (its peer
// address, which is unique per TCP connection). An open transaction is
// bound to the session that began it, so a bulk ingest that arrives
// without a transaction id, from the same session, joins it.
func sessionKey(ctx context.Context) string {
	if c, err := session.GetIncomingCookieByName(ctx, SessionCookie); err == nil && c.Value != "" {
		return "cookie:" + c.Value
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return PeerSession(p.Addr)
	}
	return ""
}

// PeerSession is the session key of a client identified by its connection.
// The server reports the end of such a connection to the transaction
// manager under this key.
func PeerSession(addr net.Addr) string { return "peer:" + addr.String() }

// sessionIndex is what the gateway keeps per session, so that the end of
// a session frees it: the prepared statements cached for it and the
// session options of each principal using it. It is guarded by sqlState.mu.
type sessionIndex struct {
	// prepared maps a session key to the ids of its cached statements.
	prepared map[string]map[string]bool
	// options maps a session key to each principal's (ID) options.
	options map[string]map[string]sessionOptions
	// owners counts the sessions with options of each principal (ID).
	owners map[string]int
	// seq numbers cached statements in the order they were cached.
	seq uint64
}

func (x *sessionIndex) addPrepared(st *prepared) {
	if x.prepared == nil {
		x.prepared = map[string]map[string]bool{}
	}
	if x.prepared[st.session] == nil {
		x.prepared[st.session] = map[string]bool{}
	}
	x.prepared[st.session][st.id] = true
}

func (x *sessionIndex) removePrepared(st *prepared) {
	delete(x.prepared[st.session], st.id)
	if len(x.prepared[st.session]) == 0 {
		delete(x.prepared, st.session)
	}
}

// setOptions keeps owner's options for session, refusing a principal
// that already keeps options for MaxSessionsPerPrincipal sessions (or a
// full store) rather than forgetting another session's.
func (x *sessionIndex) setOptions(session, owner string, o sessionOptions) error {
	if _, ok := x.options[session][owner]; !ok {
		if x.owners[owner] >= MaxSessionsPerPrincipal {
			return status.Errorf(codes.ResourceExhausted,
				"session options: %d sessions of this principal keep options (the most there may be): close some sessions (CloseSession) or connections", MaxSessionsPerPrincipal)
		}
		total := 0
		for _, n := range x.owners {
			total += n
		}
		if total >= MaxSessions {
			return status.Errorf(codes.ResourceExhausted, "session options: %d sessions keep options (the most there may be): retry later", MaxSessions)
		}
		if x.options == nil {
			x.options, x.owners = map[string]map[string]sessionOptions{}, map[string]int{}
		}
		if x.options[session] == nil {
			x.options[session] = map[string]sessionOptions{}
		}
		x.owners[owner]++
	}
	x.options[session][owner] = o
	return nil
}

// dropOptions forgets owner's options for session ("" owner: everyone's).
func (x *sessionIndex) dropOptions(session, owner string) {
	for o := range x.options[session] {
		if owner != "" && o != owner {
			continue
		}
		delete(x.options[session], o)
		if x.owners[o]--; x.owners[o] <= 0 {
			delete(x.owners, o)
		}
	}
	if len(x.options[session]) == 0 {
		delete(x.options, session)
	}
}

// SessionEnded frees what the session kept: its cached prepared
// statements (their handles stay usable by their owners, rebuilt at
// their next use) and its session options. The server calls it when a
// client connection closes, with PeerSession's key.
func (h *Handler) SessionEnded(session string) {
	h.endSession(session, "")
}

// endSession frees what session kept for owner ("" for everyone).
func (h *Handler) endSession(session, owner string) {
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	for id := range h.sql.sessions.prepared[session] {
		if st := h.sql.prepared[id]; st != nil && (owner == "" || st.owner == owner) {
			h.uncacheLocked(st)
		}
	}
	h.sql.sessions.dropOptions(session, owner)
}
