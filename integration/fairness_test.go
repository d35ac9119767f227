package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
)

// TestOnePrincipalCannotStarveOthers: alice takes every slot she can
// (stalled uploads, unread results, prepared statements left open); her
// streams over her share wait for it (one whose deadline ends first fails
// DeadlineExceeded), bob's ingest, query and prepare go through meanwhile,
// and her stalled streams are cut after timeouts.stream_idle, which gives
// her share back.
func TestOnePrincipalCannotStarveOthers(t *testing.T) {
	requireEngine(t)
	alicePw, _ := auth.HashPassword("alice-pw")
	bobPw, _ := auth.HashPassword("bob-pw")
	g := startGateway(t, fmt.Sprintf(`
auth:
  enabled: true
  users:
    - {name: alice, password_hash: "%s"}
    - {name: bob, password_hash: "%s"}
limits: {max_concurrent_writes: 2, per_principal_writes: 1, max_concurrent_queries: 2, per_principal_queries: 1,
         prepared_per_session: 2, query_queue_wait: 2s}
timeouts: {stream_idle: 500ms}
`, alicePw, bobPw))
	ca, actx := login(t, g, "alice", "alice-pw")
	cb, bctx := login(t, g, "bob", "bob-pw")
	if _, err := ca.ExecuteIngest(actx, reader(t, people(t, 0, 1)), modeCreate("fair")); err != nil {
		t.Fatal(err)
	}
	stallCtx, stop := context.WithCancel(actx)
	defer stop()

	// Alice's uploads: one stalls after a batch, the next is over her share.
	var uploads []flight.FlightService_DoPutClient
	for range 2 {
		stream, err := ca.Client.DoPut(stallCtx)
		if err != nil {
			t.Fatal(err)
		}
		w := flight.NewRecordWriter(stream, ipc.WithSchema(peopleSchema))
		w.SetFlightDescriptor(ingestDescriptor(t, "fair"))
		// io.EOF: the gateway refused the stream already; its status
		// follows.
		if err := w.Write(people(t, 100, 10)); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		uploads = append(uploads, stream)
		time.Sleep(100 * time.Millisecond) // the gateway has it running
	}

	// Alice's results: one unread, the next over her share.
	info, err := ca.Execute(actx, `SELECT i FROM range(100000000) t(i)`)
	if err != nil {
		t.Fatal(err)
	}
	unread, err := ca.DoGet(stallCtx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer unread.Release()
	dctx, dcancel := context.WithTimeout(actx, 300*time.Millisecond)
	defer dcancel()
	if _, err := ca.DoGet(dctx, info.Endpoint[0].Ticket); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("alice's second result: %v, want it to wait for her share until its deadline", err)
	}

	// Alice's prepared statements: her session's share, then refused.
	for i := range 2 {
		if _, err := ca.Prepare(actx, fmt.Sprintf("SELECT %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = ca.Prepare(actx, "SELECT 3")
	assertStatus(t, err, codes.ResourceExhausted, "limits.prepared_per_session")

	// Bob is not starved: his ingest, query and prepare go through while
	// alice holds everything she may.
	bctx, cancel := context.WithTimeout(bctx, 3*time.Second)
	defer cancel()
	if _, err := cb.ExecuteIngest(bctx, reader(t, people(t, 1, 1)), modeAppend("fair")); err != nil {
		t.Fatalf("bob's ingest: %v", err)
	}
	binfo, err := cb.Execute(bctx, `SELECT count(*) FROM fair`)
	if err != nil {
		t.Fatalf("bob's query: %v", err)
	}
	brdr, err := cb.DoGet(bctx, binfo.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("bob's query: %v", err)
	}
	for brdr.Next() {
	}
	if err := brdr.Err(); err != nil {
		t.Fatalf("bob's query: %v", err)
	}
	brdr.Release()
	if _, err := cb.Prepare(bctx, "SELECT 1"); err != nil {
		t.Fatalf("bob's prepare: %v", err)
	}

	// Alice's stalled streams are cut after the idle timeout: the second
	// upload once it had her share, after the first was cut.
	assertStatus(t, lastError(uploads[0]), codes.DeadlineExceeded, "timeouts.stream_idle")
	assertStatus(t, lastError(uploads[1]), codes.DeadlineExceeded, "timeouts.stream_idle")
	// The unread result is cut once gRPC's flow control has held a
	// message for the idle timeout; its client then reads what was in
	// flight, and the status.
	if !eventually(t, 10*time.Second, func() bool {
		return strings.Contains(g.logs.String(), "method=/arrow.flight.protocol.FlightService/DoGet code=DeadlineExceeded")
	}) {
		t.Fatal("the unread result was not cut")
	}
	for unread.Next() {
	}
	assertStatus(t, unread.Err(), codes.DeadlineExceeded, "timeouts.stream_idle")
	// Her share is hers again; the stalled upload staged nothing that
	// landed.
	if _, err := ca.ExecuteIngest(actx, reader(t, people(t, 2, 1)), modeAppend("fair")); err != nil {
		t.Fatalf("alice's ingest after the cut: %v", err)
	}
	if info, err = ca.Execute(actx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	rdr, err := ca.DoGet(actx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatalf("alice's query after the cut: %v", err)
	}
	rdr.Release()
	got := int64Column(t, g.readTable(t, "fair"), "id")
	slices.Sort(got)
	if !slices.Equal(got, []int64{0, 1, 2}) {
		t.Fatalf("table: %v", got)
	}
}
