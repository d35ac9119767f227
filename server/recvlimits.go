package server

import (
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/handlers"
)

// Per-method receive limits. gRPC's MaxRecvMsgSize is one limit for every
// method, checked against a message's length prefix before its body is
// read, and a unary request is received before any interceptor runs. So
// the server's limit is the small limits.max_request_bytes, which every
// unary request, Handshake and DoExchange message is held to, and the
// streams that need more raise their own before their first receive: a
// DoPut stream's messages (Arrow batches) to limits.max_batch_bytes, a
// DoAction's body to limits.max_action_bytes. A message over its limit is
// then refused from its length prefix, with ResourceExhausted, before a
// byte of its body is buffered.
//
// grpc-go offers no per-method or per-stream limit (its serverStream
// keeps the server's in an unexported field, read on each RecvMsg), so
// setRecvLimit sets that field of the stream gRPC hands the first
// stream interceptor. integration's TestReceiveLimitsPerMethod pins it;
// should a grpc-go upgrade drop the field or wrap the stream, DoPut and
// DoAction fail with Internal naming this file instead of silently
// keeping the small limit.

// recvLimits is the first stream interceptor: it sets the receive limit
// of DoPut and DoAction streams.
func recvLimits(batchBytes, actionBytes int) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		var n int
		switch methodName(info.FullMethod) {
		case "DoPut":
			n = batchBytes
		case "DoAction":
			n = actionBytes
		default:
			return handler(srv, ss)
		}
		if err := setRecvLimit(ss, n); err != nil {
			return status.Errorf(codes.Internal, "%s: %v", methodName(info.FullMethod), err)
		}
		return handler(srv, ss)
	}
}

// recvLimitCache holds, by stream type, the offset of its receive limit
// or why it has none.
var recvLimitCache sync.Map // reflect.Type → uintptr offset, or error

// setRecvLimit sets the receive limit of ss, the stream as gRPC hands it
// to the first interceptor.
func setRecvLimit(ss grpc.ServerStream, n int) error {
	v := reflect.ValueOf(ss)
	t := v.Type()
	if v.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || t.Elem().PkgPath() != "google.golang.org/grpc" || t.Elem().Name() != "serverStream" {
		return fmt.Errorf("the stream is a %s, not grpc-go's serverStream: its receive limit cannot be set (see server/recvlimits.go)", t)
	}
	off, err := recvLimitOffset(t.Elem())
	if err != nil {
		return err
	}
	*(*int)(unsafe.Add(v.UnsafePointer(), off)) = n
	return nil
}

// recvLimitOffset finds grpc.serverStream's maxReceiveMessageSize.
func recvLimitOffset(t reflect.Type) (uintptr, error) {
	if c, ok := recvLimitCache.Load(t); ok {
		if err, isErr := c.(error); isErr {
			return 0, err
		}
		return c.(uintptr), nil
	}
	f, ok := t.FieldByName("maxReceiveMessageSize")
	if !ok || f.Type.Kind() != reflect.Int || len(f.Index) != 1 {
		err := fmt.Errorf("this grpc-go has no serverStream.maxReceiveMessageSize: the per-method receive limits cannot be set (see server/recvlimits.go)")
		recvLimitCache.Store(t, err)
		return 0, err
	}
	recvLimitCache.Store(t, f.Offset)
	return f.Offset, nil
}

// reserveActionBodies makes a DoAction's body wait, before it is
// received, for room in limits.action_memory, the gateway's and its
// principal's (handlers.ReserveActionBody): it runs after
// authentication, which names the principal.
func reserveActionBodies(h *handlers.Handler, wait time.Duration) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if methodName(info.FullMethod) != "DoAction" {
			return handler(srv, ss)
		}
		return handler(srv, &actionBodyStream{ServerStream: ss, h: h, wait: wait})
	}
}

// actionBodyStream reserves room for the body around its first receive.
type actionBodyStream struct {
	grpc.ServerStream
	h        *handlers.Handler
	wait     time.Duration
	received bool
}

func (s *actionBodyStream) RecvMsg(m any) error {
	if s.received {
		return s.ServerStream.RecvMsg(m)
	}
	s.received = true
	release, err := s.h.ReserveActionBody(s.Context(), s.wait)
	if err != nil {
		return err
	}
	defer release()
	return s.ServerStream.RecvMsg(m)
}
