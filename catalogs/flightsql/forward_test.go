package flightsql

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"

	"github.com/flightgw/flightgw/catalogs"
)

// TestForwardCallerToken: with forward_caller_token a caller's query
// carries the caller's bearer token upstream (the FlightInfo and the
// DoGet), never the catalog's; the gateway's own calls (no caller in the
// context) keep the catalog's; a caller without a bearer token (Basic on
// every call) is refused Unauthenticated without sending the password.
// Off (the default), the caller's token never leaves the gateway.
func TestForwardCallerToken(t *testing.T) {
	f := newFake()
	f.rows["a"] = []int64{7}
	f.endpoints = func() []*flight.FlightEndpoint { return []*flight.FlightEndpoint{ticket(t, "a")} }
	addr := serveFake(t, f, nil)
	caller := func(auth string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", auth))
	}
	for _, tc := range []struct {
		name    string
		forward string
		ctx     context.Context
		sent    string // the authorization the upstream got; "" : refused
	}{
		{"off: a caller with a bearer token", "", caller("Bearer caller-tok"), "Bearer svc-tok"},
		{"on: a caller with a bearer token", "true", caller("Bearer caller-tok"), "Bearer caller-tok"},
		{"on: the gateway's own call", "true", context.Background(), "Bearer svc-tok"},
		{"on: a caller with Basic credentials", "true", caller("Basic YWxpY2U6cHc="), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.resetAuth()
			p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + addr, propToken: "svc-tok",
				propForward: tc.forward, catalogs.PropRemoteTimeout: "5000"})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ctx, err := p.asCaller(tc.ctx)
			var got []int64
			if err == nil {
				got, err = readAll(ctx, p)
			}
			if tc.sent == "" {
				if catalogs.Kind(err) != catalogs.ErrUnauthenticated || !strings.Contains(err.Error(), propForward) || strings.Contains(err.Error(), "YWxpY2U6cHc") {
					t.Fatalf("%v, want Unauthenticated naming %s", err, propForward)
				}
				if n := len(f.authOf(infoKey)); n != 0 {
					t.Fatalf("%d calls reached the upstream", n)
				}
				return
			}
			if err != nil || !slices.Equal(got, []int64{7}) {
				t.Fatalf("rows %v, %v", got, err)
			}
			for _, k := range []string{infoKey, "a"} {
				if a := f.authOf(k); !slices.Equal(a, []string{tc.sent}) {
					t.Fatalf("%s carried %q, want %q", k, a, tc.sent)
				}
			}
		})
	}
}

// TestForwardedTokenRefused: a forwarded token the upstream refuses is
// the caller's Unauthenticated (log in again), not the catalog's
// PermissionDenied, and no handshake with the catalog's user is tried in
// its place.
func TestForwardedTokenRefused(t *testing.T) {
	f := newFake()
	f.rows["a"] = []int64{7}
	f.endpoints = func() []*flight.FlightEndpoint { return []*flight.FlightEndpoint{ticket(t, "a")} }
	v := &tokens{valid: map[string]bool{}}
	addr := serveFake(t, f, []flight.ServerMiddleware{flight.CreateServerBasicAuthMiddleware(v)})
	p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + addr, propUser: "gw", propPassword: "pw",
		propForward: "true", catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, err := p.asCaller(metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer stale")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAll(ctx, p)
	if catalogs.Kind(err) != catalogs.ErrUnauthenticated || !strings.Contains(err.Error(), "caller's forwarded bearer token") {
		t.Fatalf("a refused forwarded token: %v, want the caller's Unauthenticated", err)
	}
	if n := v.count(); n != 0 {
		t.Fatalf("%d handshakes with the catalog's user in place of the caller's token", n)
	}
}

// TestCancelReleasedRead: a read released before its end asks the
// upstream to cancel its FlightInfo (when the upstream cancels), as the
// caller whose token is forwarded.
func TestCancelReleasedRead(t *testing.T) {
	f := newFake()
	f.rows["a"] = make([]int64, 1000)
	f.endpoints = func() []*flight.FlightEndpoint { return []*flight.FlightEndpoint{ticket(t, "a")} }
	addr := serveFake(t, f, nil)
	p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + addr, propToken: "svc-tok",
		propForward: "true", catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.canCancel.Store(true)
	ctx, err := p.asCaller(metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer caller-tok")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.query(ctx, "query", func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, "SELECT v FROM t")
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	r.Release()
	select {
	case c := <-f.cancels:
		if len(c.req.GetInfo().GetEndpoint()) != 1 || !slices.Equal(c.auth, []string{"Bearer caller-tok"}) {
			t.Fatalf("CancelFlightInfo of %d endpoint(s) carried %q, want the query's one as the caller", len(c.req.GetInfo().GetEndpoint()), c.auth)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no CancelFlightInfo reached the upstream after an early release")
	}
}
