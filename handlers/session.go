package handlers

import (
	"context"
	"net"

	"github.com/apache/arrow-go/v18/arrow/flight/session"
	"google.golang.org/grpc/peer"
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
