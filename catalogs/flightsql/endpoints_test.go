package flightsql

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
)

// TestEndpointsReadInParallel: a FlightInfo of two endpoints, one on the
// upstream and one at an allowed location, is read with both streams
// open at once (the first endpoint's stream waits for the second's to
// start), its batches handed on in endpoint order, and the catalog's
// credential sent to the allowed location.
func TestEndpointsReadInParallel(t *testing.T) {
	f := newFake()
	second := make(chan struct{})
	f.rows["a"], f.rows["b"] = []int64{1, 2, 3}, []int64{10, 20}
	f.before["a"] = func(ctx context.Context) error {
		select {
		case <-second:
			return nil
		case <-time.After(5 * time.Second):
			return status.Error(codes.FailedPrecondition, "endpoint b was not opened while a was: the endpoints are read one after the other")
		}
	}
	f.before["b"] = func(context.Context) error { close(second); return nil }
	main := serveFake(t, f, nil)
	replica := serveFake(t, f, nil)
	f.endpoints = func() []*flight.FlightEndpoint {
		return []*flight.FlightEndpoint{ticket(t, "a"), ticket(t, "b", "grpc://"+replica)}
	}
	p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + main, propToken: "tok-1",
		propLocations: replica, catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got, err := readAll(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 2, 3, 10, 20}; !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v (in endpoint order)", got, want)
	}
	if a := f.authOf("b"); !slices.Equal(a, []string{"Bearer tok-1"}) {
		t.Fatalf("the allowed location got authorization %q, want the catalog's token", a)
	}
}

// TestEndpointLocationRefused: a FlightInfo whose second endpoint is
// served only at a host off the allowlist fails the query before any
// stream is opened, naming that host; nothing connects to it, and the
// default allowlist is the upstream's own address only.
func TestEndpointLocationRefused(t *testing.T) {
	f := newFake()
	f.rows["a"], f.rows["b"] = []int64{1}, []int64{2}
	main := serveFake(t, f, nil)
	// The host the FlightInfo points at: a listener that counts who
	// connects.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	var dialed atomic.Int32
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			c.Close()
		}
	}()
	elsewhere := lis.Addr().String()
	f.endpoints = func() []*flight.FlightEndpoint {
		return []*flight.FlightEndpoint{ticket(t, "a"), ticket(t, "b", "grpc://"+elsewhere)}
	}
	for _, allow := range []string{"", "replica.internal"} {
		p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + main, propToken: "tok-1",
			propLocations: allow, catalogs.PropRemoteTimeout: "5000"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = readAll(context.Background(), p)
		_ = p.Close()
		if catalogs.Kind(err) != catalogs.ErrFailedPrecondition || !strings.Contains(err.Error(), elsewhere) || !strings.Contains(err.Error(), propLocations) {
			t.Fatalf("allowlist %q: an endpoint at %s: %v, want FailedPrecondition naming the host and %s", allow, elsewhere, err, propLocations)
		}
	}
	if n := len(f.authOf("a")); n != 0 {
		t.Fatalf("%d streams opened before the refusal", n)
	}
	time.Sleep(100 * time.Millisecond)
	if n := dialed.Load(); n != 0 {
		t.Fatalf("the refused host %s was connected to %d times", elsewhere, n)
	}
}

// TestEndpointsReleasedEarly: a result released after its first batch
// ends every endpoint's stream upstream (their contexts are canceled)
// and leaves no reading goroutine behind (Release waits for them).
func TestEndpointsReleasedEarly(t *testing.T) {
	f := newFake()
	ctxs := make(chan context.Context, 2)
	for _, h := range []string{"a", "b"} {
		f.rows[h] = make([]int64, 1000)
		f.before[h] = func(ctx context.Context) error { ctxs <- ctx; return nil }
	}
	main := serveFake(t, f, nil)
	f.endpoints = func() []*flight.FlightEndpoint { return []*flight.FlightEndpoint{ticket(t, "a"), ticket(t, "b")} }
	p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + main, catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r, err := p.query(context.Background(), "query", func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, "SELECT v FROM t")
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	// Both endpoints are read in parallel: wait until both streams are
	// open upstream, then release the result after its first batch.
	var opened []context.Context
	for range 2 {
		select {
		case ctx := <-ctxs:
			opened = append(opened, ctx)
		case <-time.After(5 * time.Second):
			t.Fatal("the second endpoint was never opened (endpoints are read in parallel)")
		}
	}
	r.Release()
	for _, ctx := range opened {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("an endpoint's stream goes on upstream after the result was released")
		}
	}
}
