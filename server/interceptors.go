package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recoverUnary turns a panic in a handler into Internal with a log line
// carrying the stack. Tests assert it never fires on client input.
func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
			}
		}()
		return handler(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
			}
		}()
		return handler(srv, ss)
	}
}

// logCall writes one line per call: method, code, duration, and the
// error's text when it failed. Success logs at debug, client errors
// (a client that went away among them: Canceled) at info, server errors
// at warn.
func logCall(log *slog.Logger, method string, start time.Time, err error) {
	code := status.Code(err)
	lvl := slog.LevelInfo
	switch code {
	case codes.OK:
		lvl = slog.LevelDebug
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		lvl = slog.LevelWarn
	}
	attrs := []any{"method", method, "code", code.String(), "duration", time.Since(start)}
	if err != nil {
		attrs = append(attrs, "err", status.Convert(err).Message())
	}
	log.Log(context.Background(), lvl, "call", attrs...)
}

func logUnary(log *slog.Logger, inflight *calls) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		end := inflight.begin(info.FullMethod)
		resp, err := handler(ctx, req)
		end()
		logCall(log, info.FullMethod, start, err)
		return resp, err
	}
}

func logStream(log *slog.Logger, inflight *calls) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		end := inflight.begin(info.FullMethod)
		err := handler(srv, ss)
		end()
		logCall(log, info.FullMethod, start, err)
		return err
	}
}
