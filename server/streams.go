package server

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flightgw/flightgw/internal/recovered"
)

// guardStreams wraps every streaming call in a guardedStream: a message
// that did not decode (see frameCodec) is the client's fault
// (InvalidArgument), and a DoPut or DoGet whose client makes no
// progress for idle (no message arrives, or the client accepts none) is
// cut with DeadlineExceeded, its context cancelled so that the handler
// frees its slot and discards what it staged. It runs before
// authentication, so that a stalled first message is cut as well.
func guardStreams(idle time.Duration, bad *badMessages) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		gs := &guardedStream{ServerStream: ss, bad: bad, method: methodName(info.FullMethod)}
		if gs.method == "DoPut" || gs.method == "DoGet" {
			gs.idle = idle
		}
		var cancel context.CancelCauseFunc
		gs.ctx, cancel = context.WithCancelCause(ss.Context())
		// Admission (limits.go) finds the stream's progress here.
		gs.ctx = context.WithValue(gs.ctx, guardedKey{}, gs)
		gs.cancel = cancel
		defer cancel(nil)
		err := handler(srv, gs)
		// The pumps end once gRPC ends the stream (which unblocks the
		// call a stalled pump is in), after this returns.
		gs.recv.close()
		gs.send.close()
		if cut := gs.cutErr(); cut != nil {
			return cut
		}
		return err
	}
}

// guardedStream is a ServerStream whose receives and sends are bounded
// by the idle timeout. A call that may block on the client (RecvMsg,
// SendMsg) runs on a pump goroutine while the handler's goroutine waits
// for it at most idle: gRPC offers no way to interrupt a blocked call
// but ending the stream, which only the handler's return does.
type guardedStream struct {
	grpc.ServerStream
	ctx    context.Context
	cancel context.CancelCauseFunc
	bad    *badMessages
	method string
	idle   time.Duration // 0: not bounded
	recv   pump
	send   pump
	// cut is why the stream was cut: the idle timeout, or its slot
	// given up to waiting callers (yield).
	cut      atomic.Pointer[error]
	progress progress
}

// guardedKey is the context key of a stream's guardedStream.
type guardedKey struct{}

func (s *guardedStream) cutErr() error {
	if p := s.cut.Load(); p != nil {
		return *p
	}
	return nil
}

// yield cuts the stream with err, from any goroutine: its context is
// cancelled, and its blocked receive or send, and every later one, fails
// with err.
func (s *guardedStream) yield(err error) {
	s.cut.CompareAndSwap(nil, &err)
	s.cancel(s.cutErr())
}

func (s *guardedStream) Context() context.Context { return s.ctx }

// RecvMsg receives the next message. After a timeout, the stalled call
// may still write into m when the stream ends; the handler has returned
// by then and no longer reads m.
func (s *guardedStream) RecvMsg(m any) error {
	err := s.bounded(&s.recv, "no message received", func() error { return s.ServerStream.RecvMsg(m) })
	if err == nil {
		if derr := s.bad.take(m); derr != nil {
			return malformed(s.method, m, derr)
		}
		s.progress.moved(time.Now(), messageSize(m))
	}
	return err
}

// SendMsg sends m; m belongs to gRPC once passed, whether or not the
// send completes in time.
func (s *guardedStream) SendMsg(m any) error {
	n := messageSize(m) // before gRPC frees an encodedFrame's buffers
	err := s.bounded(&s.send, "the client accepted no message", func() error { return s.ServerStream.SendMsg(m) })
	if err == nil {
		s.progress.moved(time.Now(), n)
	}
	return err
}

// messageSize is about what m weighs on the wire.
func messageSize(m any) int64 {
	switch m := m.(type) {
	case *encodedFrame:
		return int64(m.data.Len())
	case *flight.FlightData:
		return int64(len(m.DataHeader) + len(m.DataBody) + len(m.AppMetadata))
	case proto.Message:
		return int64(proto.Size(m))
	}
	return 0
}

// bounded runs call on p, waiting at most the idle timeout, while the
// stream waits for its client (progress.blocked).
func (s *guardedStream) bounded(p *pump, what string, call func() error) error {
	if err := s.cutErr(); err != nil {
		return err
	}
	s.progress.setBlocked(true)
	defer s.progress.setBlocked(false)
	if s.idle <= 0 {
		return call()
	}
	p.start()
	p.calls <- call
	timer := time.NewTimer(s.idle)
	defer timer.Stop()
	select {
	case err := <-p.results:
		return err
	case <-s.ctx.Done():
		if err := s.cutErr(); err != nil {
			return err
		}
		// The client's end: the call itself ends with it.
		select {
		case err := <-p.results:
			return err
		case <-timer.C:
		}
	case <-timer.C:
	}
	s.yield(status.Errorf(codes.DeadlineExceeded, "%s stream idle for %s (%s): cut by timeouts.stream_idle", s.method, s.idle, what))
	return s.cutErr()
}

// pump runs one stream direction's blocking calls, one at a time, on a
// goroutine of its own. Started on first use; close ends it after its
// current call.
type pump struct {
	calls   chan func() error
	results chan error
}

func (p *pump) start() {
	if p.calls != nil {
		return
	}
	p.calls = make(chan func() error)
	p.results = make(chan error, 1)
	go func() {
		for call := range p.calls {
			p.results <- safeCall(call)
		}
	}()
}

// safeCall runs a stream call on a pump's goroutine, its panic (in a
// codec, say) the call's error rather than the process's end.
func safeCall(call func() error) (err error) {
	defer recovered.Catch(&err, "stream")
	return call()
}

func (p *pump) close() {
	if p.calls != nil {
		close(p.calls)
	}
}

// rejectMalformed answers InvalidArgument to a unary call whose request
// did not decode (see frameCodec).
func rejectMalformed(bad *badMessages) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := bad.take(req); err != nil {
			return nil, malformed(methodName(info.FullMethod), req, err)
		}
		return handler(ctx, req)
	}
}

// malformed is the status of a message m that did not decode.
func malformed(method string, m any, err error) error {
	name := fmt.Sprintf("%T", m)
	if pm, ok := m.(proto.Message); ok {
		name = string(pm.ProtoReflect().Descriptor().Name())
	}
	return status.Errorf(codes.InvalidArgument, "%s: malformed %s message: %v", method, name, err)
}

// methodName is the last element of a gRPC method name: DoPut.
func methodName(full string) string { return full[strings.LastIndex(full, "/")+1:] }
