package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightgw/flightgw/auth"
)

// countVia runs a count through c as the caller of ctx; with params it
// is a prepared statement (the engine plans it and scans the upstream).
func countVia(ctx context.Context, c *flightsql.Client, q string, params arrow.RecordBatch) (int64, error) {
	var run func() (*flight.FlightInfo, error)
	if params == nil {
		run = func() (*flight.FlightInfo, error) { return c.Execute(ctx, q) }
	} else {
		run = func() (*flight.FlightInfo, error) {
			st, err := c.Prepare(ctx, q)
			if err != nil {
				return nil, err
			}
			defer st.Close(ctx)
			st.SetParameters(params)
			return st.Execute(ctx)
		}
	}
	info, err := run()
	if err != nil {
		return 0, err
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n = rdr.RecordBatch().Column(0).(*array.Int64).Value(0)
	}
	return n, rdr.Err()
}

// TestUpstreamForwardsCallerToken: two gateways sharing their token
// signing key, the upstream knowing bob in a realm that sees none of its
// catalogs. Through a catalog with forward_caller_token, alice's queries
// and ingest run upstream as alice (her transaction is begun as her) and
// bob's are refused there; through one without it, bob reads with the
// catalog's service user.
func TestUpstreamForwardsCallerToken(t *testing.T) {
	requireEngine(t)
	hash := func(pw string) string {
		h, err := auth.HashPassword(pw)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	gwH, aliceH, bobH := hash("gw-pw"), hash("alice-pw"), hash("bob-pw")
	users := func(bobRealm string) string {
		return fmt.Sprintf(`auth:
  enabled: true
  signing_key: shared-auth-key
  users:
    - {name: gw, realm: default, password_hash: "%s"}
    - {name: alice, realm: default, password_hash: "%s"}
    - {name: bob, realm: %s, password_hash: "%s"}
`, gwH, aliceH, bobRealm, bobH)
	}
	up := startGateway(t, users("other"))
	upc := up.adbcConn(t, map[string]string{adbc.OptionKeyUsername: "gw", adbc.OptionKeyPassword: "gw-pw"})
	if _, err := ingest(t, upc, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	service := "      user: gw\n      password: gw-pw\n"
	fwd := startGateway(t, federatedYAML(up.addr, service+"      forward_caller_token: true\n"+users("default")))
	plain := startGateway(t, federatedYAML(up.addr, service+users("default")))

	const pushed = `SELECT count(*) FROM up."default".people`
	const scanned = `SELECT count(*) FROM up."default".people WHERE id >= ?`
	params := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int64}}, nil),
		func(int) string { return `{"p": 5}` }, 1)
	for _, tc := range []struct {
		gw     *gateway
		user   string
		q      string
		params arrow.RecordBatch
		want   int64 // -1: refused upstream
	}{
		{fwd, "alice", pushed, nil, 10},
		{fwd, "alice", scanned, params, 5},
		{fwd, "bob", pushed, nil, -1},
		{fwd, "bob", scanned, params, -1},
		{plain, "bob", pushed, nil, 10},
		{plain, "bob", scanned, params, 5},
	} {
		c, ctx := login(t, tc.gw, tc.user, tc.user+"-pw")
		n, err := countVia(ctx, c, tc.q, tc.params)
		forwarding := tc.gw == fwd
		switch {
		case tc.want < 0 && (err == nil || !strings.Contains(err.Error(), up.addr)):
			t.Fatalf("forwarding %v, %s: %s: %d %v, want the upstream's refusal", forwarding, tc.user, tc.q, n, err)
		case tc.want >= 0 && (err != nil || n != tc.want):
			t.Fatalf("forwarding %v, %s: %s: %d %v, want %d", forwarding, tc.user, tc.q, n, err, tc.want)
		}
	}

	c, ctx := login(t, fwd, "alice", "alice-pw")
	if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 100, 3)), upOpts("people", false)); err != nil || n != 3 {
		t.Fatalf("alice's ingest through the forwarding catalog: %d %v", n, err)
	}
	if !strings.Contains(grepLines(up.logs.String(), "transaction begun"), "principal=alice") {
		t.Fatalf("the upstream transaction was not begun as alice:\n%s", grepLines(up.logs.String(), "transaction begun"))
	}
	for _, g := range []*gateway{up, fwd, plain} {
		if l := g.logs.String(); strings.Contains(l, "Bearer ") || strings.Contains(l, "-pw") {
			t.Errorf("a credential reached the log:\n%s", grepLines(l, "Bearer"))
		}
	}
}
