package server

import (
	"context"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
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

// principalLimits bounds the DoPut and DoGet streams one principal runs
// at once, so that a principal holding its whole share (stalled uploads,
// unread results) leaves the rest of max_concurrent_writes and
// max_concurrent_queries to the others. A stream over its principal's
// share is refused at once, before it waits for a shared slot: the
// principal is waiting on itself. Without authentication every caller is
// the anonymous principal, so callers are told apart by client address.
type principalLimits struct {
	writes, queries int
	mu              sync.Mutex
	running         map[string]int // method and owner: streams running
}

// share is a principal's share of a global limit for principalLimits:
// 0, for none, when it is the whole limit (then a principal's streams
// queue for the global slots as everyone's do).
func share(perPrincipal, global int) int {
	if perPrincipal >= global {
		return 0
	}
	return perPrincipal
}

// newPrincipalLimits bounds each principal's DoPut (writes) and DoGet
// (queries) streams; 0 for no bound.
func newPrincipalLimits(writes, queries int) *principalLimits {
	return &principalLimits{writes: writes, queries: queries, running: map[string]int{}}
}

func (l *principalLimits) stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		method := methodName(info.FullMethod)
		var limit int
		var key string
		switch method {
		case "DoPut":
			limit, key = l.writes, "limits.per_principal_writes"
		case "DoGet":
			limit, key = l.queries, "limits.per_principal_queries"
		}
		if limit <= 0 {
			return handler(srv, ss)
		}
		who := streamOwner(ss.Context())
		k := method + "\x00" + who
		l.mu.Lock()
		if l.running[k] >= limit {
			l.mu.Unlock()
			return status.Errorf(codes.ResourceExhausted, "too many concurrent %s streams for %s (%s = %d): finish or cancel one first",
				method, who, key, limit)
		}
		l.running[k]++
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			if l.running[k]--; l.running[k] <= 0 {
				delete(l.running, k)
			}
			l.mu.Unlock()
		}()
		return handler(srv, ss)
	}
}

// streamOwner names whose share a stream counts against: its principal,
// or the client address of an anonymous caller.
func streamOwner(ctx context.Context) string {
	p, _ := auth.FromContext(ctx)
	if !p.Anonymous && p.Name != "" {
		return "principal " + p.Name
	}
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		host := pr.Addr.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		return "client " + host
	}
	return "anonymous"
}
