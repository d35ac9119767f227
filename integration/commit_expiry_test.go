package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/client"
)

// TestPreparedFilesAreReclaimed: the staged files of a PrepareCommit that
// no coordinator ever commits are deleted by the orphan reclaimer once
// older than reclaim.min_age, and the payload can no longer be committed
// once commit_messages.ttl has passed; the committed rows stay.
func TestPreparedFilesAreReclaimed(t *testing.T) {
	requireEngine(t)
	shared := t.TempDir()
	g := startGateway(t, sharedLake(shared, "expiry-key")+`reclaim: {interval: 300ms, min_age: 2s}
commit_messages: {ttl: 1s}
`)
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), modeCreate("orders")); err != nil {
		t.Fatal(err)
	}
	committed := parquetIn(t, shared)
	payload := prepareIn(t, c, modeAppend("orders"), 100, 5)
	if n := len(parquetIn(t, shared)); n <= len(committed) {
		t.Fatalf("%d data files after PrepareCommit, %d before", n, len(committed))
	}
	// Past the TTL the payload is refused; nothing lands.
	time.Sleep(1100 * time.Millisecond)
	_, err := client.CommitMessages(ctx, c, "late", payloadsFor("orders", payload))
	assertStatus(t, err, codes.InvalidArgument, "expire")
	// Past min_age the reclaimer has deleted the staged files.
	if !eventually(t, 15*time.Second, func() bool { return slices.Equal(parquetIn(t, shared), committed) }) {
		t.Fatalf("staged files of the abandoned PrepareCommit remain: %v (committed %v)", parquetIn(t, shared), committed)
	}
	at, err := sharedTable(t, shared, "orders").Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if got := rows(at); got != 3 {
		t.Fatalf("rows = %d", got)
	}
}
