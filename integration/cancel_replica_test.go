package integration

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// startLongRead plans a long query through planner and starts reading its
// ticket through reader; it returns the FlightInfo and the open stream,
// one batch read.
func startLongRead(t *testing.T, ctx context.Context, planner, reader *flightsql.Client, rctx context.Context) (*flight.FlightInfo, *flight.Reader) {
	t.Helper()
	info, err := planner.Execute(ctx, `SELECT i, i * 2 AS j FROM range(200000000) t(i)`)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := reader.DoGet(rctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rdr.Release)
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	return info, rdr
}

// drainCancelled reads rdr to its end, which must be a Canceled error
// before the last row.
func drainCancelled(t *testing.T, rdr *flight.Reader) {
	t.Helper()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	if rdr.Err() == nil || n >= 200000000 {
		t.Fatalf("the stream ran to its end after the cancel (%d rows)", n)
	}
	assertStatus(t, rdr.Err(), codes.Canceled, "cancelled")
}

// TestCancelAcrossReplicas: replicas that share their keys and list each
// other in cluster.peers. A query planned on one and read from another
// stops when the first is asked to cancel it: the cancel is forwarded, as
// the caller (auth on), and the reading replica refuses the ticket from
// then on. A peer that cannot be reached makes the answer CANCELLING, the
// reachable ones still cancel, and no credential reaches the logs.
func TestCancelAcrossReplicas(t *testing.T) {
	requireEngine(t)
	hash, err := auth.HashPassword("alice-pw")
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf(`auth:
  enabled: true
  signing_key: cluster-auth-key
  users:
    - {name: alice, realm: default, password_hash: "%s"}
tickets: {signing_key: cluster-ticket-key}
`, hash)
	reader := startGateway(t, base)
	planner := startGateway(t, base+fmt.Sprintf("cluster: {peers: [%q]}\n", reader.addr))
	dead := closedAddr(t)
	partial := startGateway(t, base+fmt.Sprintf("cluster: {peers: [%q, %q], peer_timeout: 500ms}\n", reader.addr, dead))

	cr, rctx := login(t, reader, "alice", "alice-pw")
	cp, pctx := login(t, planner, "alice", "alice-pw")

	info, rdr := startLongRead(t, pctx, cp, cr, rctx)
	res, err := cp.CancelFlightInfo(pctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("cancel on the planner: %v %v", res.GetStatus(), err)
	}
	drainCancelled(t, rdr)
	if !strings.Contains(reader.logs.String(), "forwarded=true") {
		t.Error("the reader did not log a forwarded cancel")
	}
	// The reader refuses the cancelled ticket now, the planner too.
	for _, side := range []struct {
		c   *flightsql.Client
		ctx context.Context
	}{{cr, rctx}, {cp, pctx}} {
		r, err := side.c.DoGet(side.ctx, info.Endpoint[0].Ticket)
		if err == nil {
			r.Next()
			err = r.Err()
			r.Release()
		}
		assertStatus(t, err, codes.Canceled, "cancelled")
	}

	// One peer down: the reachable one cancels, the answer is CANCELLING.
	cpart, partCtx := login(t, partial, "alice", "alice-pw")
	info, rdr = startLongRead(t, partCtx, cpart, cr, rctx)
	res, err = cpart.CancelFlightInfo(partCtx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusCancelling {
		t.Fatalf("cancel with a peer down: %v %v, want CANCELLING", res.GetStatus(), err)
	}
	drainCancelled(t, rdr)
	logs := partial.logs.String()
	if !strings.Contains(logs, "cancel not delivered to every replica") || !strings.Contains(logs, dead) {
		t.Errorf("the unreachable peer %s is not in the log:\n%s", dead, logs)
	}
	for _, g := range []*gateway{reader, planner, partial} {
		if l := g.logs.String(); strings.Contains(l, "Bearer") || strings.Contains(l, "alice-pw") {
			t.Errorf("a credential reached the log:\n%s", l)
		}
	}
}
