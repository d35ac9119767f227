package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
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

func TestPrincipalLimits(t *testing.T) {
	limit := newPrincipalLimits(1, share(4, 4)).stream()
	put := &grpc.StreamServerInfo{FullMethod: "/arrow.flight.protocol.FlightService/DoPut"}
	get := &grpc.StreamServerInfo{FullMethod: "/arrow.flight.protocol.FlightService/DoGet"}
	as := func(name string) ctxStream {
		return ctxStream{ctx: auth.NewContext(context.Background(), auth.Principal{Name: name, Realm: auth.DefaultRealm})}
	}
	release, running := make(chan struct{}), make(chan struct{})
	go limit(nil, as("alice"), put, func(any, grpc.ServerStream) error {
		close(running)
		<-release
		return nil
	})
	<-running
	ok := func(any, grpc.ServerStream) error { return nil }
	if err := limit(nil, as("alice"), put, ok); status.Code(err) != codes.ResourceExhausted ||
		!containsAll(err.Error(), "principal alice", "limits.per_principal_writes = 1") {
		t.Fatalf("alice's second upload: %v", err)
	}
	if err := limit(nil, as("bob"), put, ok); err != nil {
		t.Fatalf("bob's upload: %v", err)
	}
	// A share equal to the global limit is no per-principal bound.
	if err := limit(nil, as("alice"), get, ok); err != nil {
		t.Fatalf("alice's query: %v", err)
	}
	close(release)
	if !eventuallyOK(func() error { return limit(nil, as("alice"), put, ok) }) {
		t.Fatal("alice's share not freed")
	}
}

func eventuallyOK(f func() error) bool {
	for range 100 {
		if f() == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
