package server

import (
	"context"
	"net"

	"google.golang.org/grpc/stats"

	"github.com/flightgw/flightgw/handlers"
)

// connWatcher tells the transaction manager and the handler when a
// client connection closes, so that transactions bound to that
// connection's session do not hold staged files for the whole idle
// timeout, and its prepared statements and session options are freed.
type connWatcher struct {
	ended []func(session string)
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
		for _, end := range w.ended {
			end(handlers.PeerSession(addr))
		}
	}
}

func (connWatcher) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connWatcher) HandleRPC(context.Context, stats.RPCStats)                       {}
