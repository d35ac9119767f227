package server

import (
	"context"
	"net"

	"google.golang.org/grpc/stats"

	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/txn"
)

// connWatcher tells the transaction manager when a client connection
// closes, so that transactions bound to that connection's session do not
// hold staged files for the whole idle timeout.
type connWatcher struct {
	txns *txn.Manager
}

type remoteKey struct{}

func (w connWatcher) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, remoteKey{}, info.RemoteAddr)
}

func (w connWatcher) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); !ok {
		return
	}
	if addr, ok := ctx.Value(remoteKey{}).(net.Addr); ok && addr != nil {
		w.txns.SessionEnded(handlers.PeerSession(addr))
	}
}

func (connWatcher) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connWatcher) HandleRPC(context.Context, stats.RPCStats)                       {}
