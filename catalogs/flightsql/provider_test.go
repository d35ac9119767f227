package flightsql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/flightgw/flightgw/catalogs"
)

// offline is a provider whose capabilities are set, not read: nothing
// here contacts the (absent) upstream.
func offline(t *testing.T, props map[string]string, c caps) *Provider {
	t.Helper()
	props[propURI] = "grpc://127.0.0.1:1"
	p, err := Open(context.Background(), "up", props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c.at, c.quote = time.Now(), `"`
	p.info = &c
	return p
}

// TestEndpointLocations: an endpoint is read from the configured
// upstream, or from a location on the allowlist over the same transport;
// one served only elsewhere is refused naming the property (no SSRF).
func TestEndpointLocations(t *testing.T) {
	p := offline(t, map[string]string{propLocations: "replica.internal:9000, other.internal"}, caps{})
	ep := func(uris ...string) *flight.FlightEndpoint {
		e := &flight.FlightEndpoint{}
		for _, u := range uris {
			e.Location = append(e.Location, &flight.Location{Uri: u})
		}
		return e
	}
	for _, tc := range []struct {
		name string
		ep   *flight.FlightEndpoint
		main bool   // read from the main connection
		err  string // refused with this in the message
	}{
		{"no location", ep(), true, ""},
		{"reuse connection", ep("arrow-flight-reuse-connection://?"), true, ""},
		{"the upstream itself", ep("grpc://127.0.0.1:1"), true, ""},
		{"allowed host and port", ep("grpc://replica.internal:9000"), false, ""},
		{"allowed host", ep("grpc+tcp://other.internal:1234"), false, ""},
		{"metadata service", ep("grpc://169.254.169.254:80"), false, propLocations},
		{"allowed host, other port", ep("grpc://replica.internal:9001"), false, propLocations},
		{"tls to an allowed host over a plain catalog", ep("grpc+tls://other.internal:1"), false, propLocations},
		{"first refused, second allowed", ep("grpc://evil:1", "grpc://other.internal:2"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.endpointConn(tc.ep)
			switch {
			case tc.err != "":
				if err == nil || catalogs.Kind(err) != catalogs.ErrFailedPrecondition || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("endpoint %v: %v, want FailedPrecondition naming %s", locations(tc.ep), err, tc.err)
				}
			case err != nil:
				t.Fatalf("endpoint %v: %v", locations(tc.ep), err)
			case (c == p.main) != tc.main:
				t.Fatalf("endpoint %v: read from %s", locations(tc.ep), c.addr)
			}
		})
	}
}

// TestWritesWithoutUpstreamTransactions: an upstream with ingest but no
// transactions takes auto-commit writes only; a write in a Flight SQL
// transaction is refused saying why, naming the upstream.
func TestWritesWithoutUpstreamTransactions(t *testing.T) {
	p := offline(t, map[string]string{propCatalog: "lake"}, caps{name: "sail", version: "0.3", sql: true, ingest: true})
	tbl := catalogs.TableIdent{Catalog: "up", Namespace: []string{"default"}, Name: "t"}
	_, err := p.OpenStream(context.Background(), tbl, catalogs.WriteTxn{ID: "u1"})
	if catalogs.Kind(err) != catalogs.ErrFailedPrecondition || !strings.Contains(err.Error(), "has no transactions") || !strings.Contains(err.Error(), "sail 0.3") {
		t.Fatalf("write in a transaction to an upstream without transactions: %v", err)
	}
	ws, err := p.OpenStream(context.Background(), tbl, catalogs.WriteTxn{ID: "u2", AutoCommit: true})
	if err != nil {
		t.Fatalf("auto-commit write: %v", err)
	}
	_ = ws.Abort(context.Background())
	ro := offline(t, map[string]string{}, caps{name: "ro", readOnly: true, ingest: true})
	if _, err := ro.OpenStream(context.Background(), tbl, catalogs.WriteTxn{ID: "u3", AutoCommit: true}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("write to a read-only upstream: %v", err)
	}
}
