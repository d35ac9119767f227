package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
)

// pushedFromTicket is the federating gateway's log line for a DoGet that
// handed the ticket's pushed query to the upstream without the engine.
const pushedFromTicket = "without the engine"

// TestUpstreamPushedTicket: the ticket of a query pushed whole to the
// upstream carries the pushed statement and the result schema, so its
// DoGet reaches the upstream without the federating gateway's engine
// parsing, binding and preparing the query again; the result is the
// upstream's own, the ticket opens for its principal only, and one whose
// pushed statement was altered is refused.
func TestUpstreamPushedTicket(t *testing.T) {
	requireEngine(t)
	up := startGateway(t, "")
	upc := up.adbcConn(t, nil)
	if _, err := ingest(t, upc, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	alicePw, _ := auth.HashPassword("alice-pw")
	bobPw, _ := auth.HashPassword("bob-pw")
	gw := startGateway(t, fmt.Sprintf(`auth:
  enabled: true
  users:
    - {name: alice, realm: sales, password_hash: "%s"}
    - {name: bob, realm: sales, password_hash: "%s"}
catalogs:
  - name: up
    type: flightsql
    realm: sales
    properties:
      uri: grpc://%s
      upstream_catalog: lake
`, alicePw, bobPw, up.addr))
	alice, actx := login(t, gw, "alice", "alice-pw")
	bob, bctx := login(t, gw, "bob", "bob-pw")

	const pushed = `SELECT count(*), sum(id), min(name) FROM up."default".people WHERE id >= 5`
	info, err := alice.Execute(actx, pushed)
	if err != nil {
		t.Fatal(err)
	}
	before := strings.Count(gw.logs.String(), pushedFromTicket)
	got := doGetRows(t, actx, alice, info)
	if want := []string{oneValue(t, upc, `SELECT count(*), sum(id), min(name) FROM people WHERE id >= 5`)}; !slices.Equal(got, want) {
		t.Fatalf("pushed aggregate through the gateway: %q, the upstream's own: %q", got, want)
	}
	if n := strings.Count(gw.logs.String(), pushedFromTicket) - before; n != 1 {
		t.Fatalf("the DoGet of a pushed query ran the engine (%d pushed from the ticket):\n%s", n, grepLines(gw.logs.String(), "query"))
	}

	t.Run("an engine query is not pushed from its ticket", func(t *testing.T) {
		info, err := alice.Execute(actx, `SELECT name FROM up."default".people WHERE id < 3 ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		before := strings.Count(gw.logs.String(), pushedFromTicket)
		if got := doGetRows(t, actx, alice, info); !slices.Equal(got, []string{"p0", "p1", "p2"}) {
			t.Fatalf("ordered query: %q", got)
		}
		if strings.Count(gw.logs.String(), pushedFromTicket) != before {
			t.Fatal("a query with ORDER BY (the engine's to run) was pushed from its ticket")
		}
	})
	t.Run("another principal", func(t *testing.T) {
		assertStatus(t, doGetErr(bctx, bob, info.Endpoint[0].Ticket), codes.PermissionDenied, "another principal")
	})
	t.Run("tampered", func(t *testing.T) {
		tampered := tamperTicket(t, info.Endpoint[0].Ticket.Ticket, "min(name)", "max(name)")
		assertStatus(t, doGetErr(actx, alice, &flight.Ticket{Ticket: tampered}), codes.Unauthenticated, "bad signature")
	})
}

// doGetErr reads a ticket to its end and returns the error of the call
// or of the stream.
func doGetErr(ctx context.Context, c *flightsql.Client, tkt *flight.Ticket) error {
	rdr, err := c.DoGet(ctx, tkt)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	return rdr.Err()
}

// doGetRows reads every endpoint of info as ctx's caller.
func doGetRows(t *testing.T, ctx context.Context, c *flightsql.Client, info *flight.FlightInfo) []string {
	t.Helper()
	var out []string
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := renderRows(rdr)
		rdr.Release()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	return out
}

// tamperTicket rewrites old as new (the same length) in the JSON payload
// of the fgw1. handle a Flight SQL ticket wraps, keeping its signature.
func tamperTicket(t *testing.T, raw []byte, old, new string) []byte {
	t.Helper()
	at := bytes.Index(raw, []byte("fgw1."))
	if at < 0 || len(old) != len(new) {
		t.Fatalf("no fgw1. handle in the ticket %q", raw)
	}
	handle := raw[at:]
	dot := bytes.LastIndexByte(handle, '.')
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(string(handle[len("fgw1."):dot]))
	if err != nil || !bytes.Contains(payload, []byte(old)) {
		t.Fatalf("ticket payload %q (%v) holds no %q", payload, err, old)
	}
	payload = bytes.ReplaceAll(payload, []byte(old), []byte(new))
	forged := append([]byte("fgw1."+enc.EncodeToString(payload)), handle[dot:]...)
	if len(forged) != len(handle) {
		t.Fatalf("the forged handle changed length")
	}
	return append(slices.Clone(raw[:at]), forged...)
}
