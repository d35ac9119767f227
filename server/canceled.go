package server

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// clientGone turns the error of a call whose client went away into the
// status that says so. A client that cancels, or stops reading a result
// (an ADBC reader released early), cancels the call's context; the
// Flight stream writer then returns context.Canceled itself, not a
// status, which gRPC, the call log and the metrics took for Unknown, a
// server error logged at WARN with no text. It is Canceled (or
// DeadlineExceeded, the client's deadline), logged at INFO. A status a
// handler chose is kept as it is.
func clientGone(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(err, context.Canceled)):
		return status.Error(codes.DeadlineExceeded, "the call's deadline passed: "+err.Error())
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return status.Error(codes.Canceled, "the client canceled the call or stopped reading its result: "+err.Error())
	}
	return err
}

func clientGoneUnary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		return resp, clientGone(ctx, err)
	}
}

func clientGoneStream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return clientGone(ss.Context(), handler(srv, ss))
	}
}
