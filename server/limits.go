package server

import (
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// limitStreams bounds how many streams of a method run at once. A stream
// over the limit waits for a slot until its context ends (the client's
// deadline or cancellation), so a burst of uploads queues instead of
// multiplying the memory each one holds (one Arrow batch plus the
// backend's open files).
func limitStreams(methodSuffix string, n int) grpc.StreamServerInterceptor {
	slots := make(chan struct{}, n)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !strings.HasSuffix(info.FullMethod, methodSuffix) {
			return handler(srv, ss)
		}
		select {
		case slots <- struct{}{}:
		case <-ss.Context().Done():
			return status.Errorf(codes.ResourceExhausted, "too many concurrent %s streams (limits.max_concurrent_writes = %d) and the call ended while waiting: %v",
				strings.TrimPrefix(methodSuffix, "/"), n, ss.Context().Err())
		}
		defer func() { <-slots }()
		return handler(srv, ss)
	}
}
