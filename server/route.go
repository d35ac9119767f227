package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/sony/gobreaker/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/recovered"
)

// The calls that can name a transaction, and the type of their request.
const flightService = "/arrow.flight.protocol.FlightService/"

var routedUnary = map[string]bool{
	flightService + "GetFlightInfo":  true,
	flightService + "GetSchema":      true,
	flightService + "PollFlightInfo": true,
}

// routedStreams maps a streaming call to its request and response types
// and whether the client streams.
var routedStreams = map[string]struct {
	req, resp     func() proto.Message
	clientStreams bool
}{
	flightService + "DoGet":    {func() proto.Message { return &flight.Ticket{} }, func() proto.Message { return &flight.FlightData{} }, false},
	flightService + "DoAction": {func() proto.Message { return &flight.Action{} }, func() proto.Message { return &flight.Result{} }, false},
	flightService + "DoPut":    {func() proto.Message { return &flight.FlightData{} }, func() proto.Message { return &flight.PutResult{} }, true},
}

// router forwards a call that names a transaction another replica holds
// to that replica (handlers.Handler.Route), as the caller: its metadata
// is passed on, marked forwarded, and the answer, headers and trailers
// come back as they are. Only a plan (unary) is retried (peers.forward);
// the replica's breaker fails calls fast while it is unreachable. The
// router runs after authentication, so only an authenticated call is
// forwarded, and the replica authenticates it again.
type router struct {
	h     *handlers.Handler
	peers *peers
	log   *slog.Logger
}

func (r router) unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		m, ok := req.(proto.Message)
		if r.peers == nil || !routedUnary[info.FullMethod] || !ok || handlers.Forwarded(ctx) {
			return handler(ctx, req)
		}
		addr := r.h.Route(m)
		if addr == "" {
			return handler(ctx, req)
		}
		r.log.Debug("call forwarded to the transaction's replica", "method", info.FullMethod, "replica", addr)
		var reply proto.Message
		switch info.FullMethod {
		case flightService + "GetSchema":
			reply = &flight.SchemaResult{}
		case flightService + "PollFlightInfo":
			reply = &flight.PollInfo{}
		default:
			reply = &flight.FlightInfo{}
		}
		err := r.peers.forward(ctx, addr, true, func(ctx context.Context, conn *grpc.ClientConn) error {
			var header, trailer metadata.MD
			err := conn.Invoke(ctx, info.FullMethod, req, reply, grpc.Header(&header), grpc.Trailer(&trailer))
			_ = grpc.SetHeader(ctx, header)
			_ = grpc.SetTrailer(ctx, trailer)
			return err
		})
		if err != nil {
			return nil, err
		}
		return reply, nil
	}
}

func (r router) stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		kind, ok := routedStreams[info.FullMethod]
		if r.peers == nil || !ok || handlers.Forwarded(ss.Context()) {
			return handler(srv, ss)
		}
		first := kind.req()
		if err := ss.RecvMsg(first); err != nil {
			if errors.Is(err, io.EOF) {
				return handler(srv, &replayStream{ServerStream: ss, eof: true})
			}
			return err
		}
		addr := r.h.Route(first)
		if addr == "" {
			return handler(srv, &replayStream{ServerStream: ss, first: first})
		}
		r.log.Debug("call forwarded to the transaction's replica", "method", info.FullMethod, "replica", addr)
		return r.peers.forward(ss.Context(), addr, false, func(ctx context.Context, conn *grpc.ClientConn) error {
			return proxyStream(ctx, ss, conn, info.FullMethod, first, kind.req, kind.resp, kind.clientStreams)
		})
	}
}

// replayStream gives the handler the request the router already read.
type replayStream struct {
	grpc.ServerStream
	first proto.Message
	eof   bool
}

func (s *replayStream) RecvMsg(m any) error {
	if s.eof {
		return io.EOF
	}
	if s.first != nil {
		dst, ok := m.(proto.Message)
		if !ok {
			return status.Errorf(codes.Internal, "route: cannot replay a %T", m)
		}
		proto.Reset(dst)
		proto.Merge(dst, s.first)
		s.first = nil
		return nil
	}
	return s.ServerStream.RecvMsg(m)
}

// proxyStream runs the call on conn: first and the rest of the client's
// messages go there, its answers come back, one message at a time. When
// the replica ends the call first, the goroutine pumping the client's
// messages may still be blocked reading the next one: it ends with the
// call, which this function's return ends (it cannot be waited for
// before, since the read only returns then).
func proxyStream(ctx context.Context, ss grpc.ServerStream, conn *grpc.ClientConn, method string, first proto.Message,
	newReq, newResp func() proto.Message, clientStreams bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: clientStreams}, method)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(first); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	sendErr := make(chan error, 1)
	if clientStreams {
		go func() {
			var perr error
			defer func() {
				if perr != nil {
					cancel()
					sendErr <- perr
				}
			}()
			defer recovered.Catch(&perr, "forwarded stream")
			for {
				m := newReq()
				if err := ss.RecvMsg(m); err != nil {
					if errors.Is(err, io.EOF) {
						sendErr <- cs.CloseSend()
						return
					}
					cancel()
					sendErr <- err
					return
				}
				if err := cs.SendMsg(m); err != nil {
					// The replica ended the call: its status comes with
					// the answers.
					sendErr <- nil
					return
				}
			}
		}()
	} else {
		sendErr <- cs.CloseSend()
	}
	if header, err := cs.Header(); err == nil && len(header) > 0 {
		if err := ss.SendHeader(header); err != nil {
			return err
		}
	}
	for {
		m := newResp()
		err := cs.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			return err
		}
		if err := ss.SendMsg(m); err != nil {
			return err
		}
	}
	ss.SetTrailer(cs.Trailer())
	return <-sendErr
}

// forward runs call against the replica at addr through its breaker, as
// the caller: the incoming metadata (but gRPC's own) goes along, marked
// forwarded. An idempotent call (planning a query) that finds the replica
// unavailable or slow is tried again, at most peerAttempts times in all;
// others are not (an ingest or a commit may have landed). An unreachable replica
// is Unavailable, naming it.
func (p *peers) forward(ctx context.Context, addr string, idempotent bool, call func(context.Context, *grpc.ClientConn) error) error {
	conn, err := p.conn(addr)
	if err != nil {
		return status.Errorf(codes.Unavailable, "the transaction's replica %s: %v", addr, err)
	}
	out := metadata.Pairs(handlers.ForwardedHeader, "transaction")
	if in, ok := metadata.FromIncomingContext(ctx); ok {
		for k, v := range in {
			if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") || k == "content-type" || k == "user-agent" ||
				k == "te" || k == handlers.ForwardedHeader {
				continue
			}
			out[k] = v
		}
	}
	attempts := 1
	if idempotent {
		attempts = peerAttempts
	}
	err = p.attempt(ctx, addr, attempts, func(ctx context.Context) error {
		return call(metadata.NewOutgoingContext(ctx, out), conn)
	})
	switch {
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return status.Errorf(codes.Unavailable, "the transaction's replica %s is failing; retry later: %v", addr, err)
	case status.Code(err) == codes.Unavailable && !strings.Contains(err.Error(), addr):
		return status.Errorf(codes.Unavailable, "the transaction's replica %s: %s", addr, status.Convert(err).Message())
	}
	return err
}

// conn is a client connection to addr, kept for later calls.
func (p *peers) conn(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	if len(p.conns) >= maxPeerBreakers {
		for a, c := range p.conns {
			c.Close()
			delete(p.conns, a)
		}
	}
	c, err := p.dial(addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	p.conns[addr] = c
	return c, nil
}

// close closes the kept connections.
func (p *peers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, c := range p.conns {
		c.Close()
		delete(p.conns, a)
	}
}
