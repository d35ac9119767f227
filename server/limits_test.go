package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

func TestLimitStreamsQueues(t *testing.T) {
	limit := limitStreams("/DoPut", 1)
	info := &grpc.StreamServerInfo{FullMethod: "/arrow.flight.protocol.FlightService/DoPut"}
	release := make(chan struct{})
	running := make(chan struct{})
	go limit(nil, ctxStream{ctx: context.Background()}, info, func(any, grpc.ServerStream) error {
		close(running)
		<-release
		return nil
	})
	<-running

	// A second upload waits; when its deadline passes it gets
	// ResourceExhausted naming the setting.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := limit(nil, ctxStream{ctx: ctx}, info, func(any, grpc.ServerStream) error { return nil })
	if status.Code(err) != codes.ResourceExhausted || !containsAll(err.Error(), "max_concurrent_writes") {
		t.Fatalf("err = %v", err)
	}
	// Other methods are not limited.
	other := &grpc.StreamServerInfo{FullMethod: "/arrow.flight.protocol.FlightService/DoGet"}
	if err := limit(nil, ctxStream{ctx: ctx}, other, func(any, grpc.ServerStream) error { return nil }); err != nil {
		t.Fatalf("DoGet limited: %v", err)
	}
	// Once the first ends, the slot is free again.
	close(release)
	done := make(chan error, 1)
	go func() {
		done <- limit(nil, ctxStream{ctx: context.Background()}, info, func(any, grpc.ServerStream) error { return nil })
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
