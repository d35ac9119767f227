package integration

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/client"
)

// TestCommitMessagesReplay: a payload committed once cannot be committed
// again under another commit id (Iceberg and Paimon): its files are
// already the table's, and a second commit would add every row twice. The
// same commit id still returns the first snapshot.
func TestCommitMessagesReplay(t *testing.T) {
	requireEngine(t)
	ctx := context.Background()
	t.Run("iceberg", func(t *testing.T) {
		shared := t.TempDir()
		c := startGateway(t, sharedLake(shared, "replay-key")).flightClient(t)
		payload := prepareIn(t, c, modeCreate("orders"), 0, 10)
		first, err := client.CommitMessages(ctx, c, "once", payloadsFor("orders", payload))
		if err != nil {
			t.Fatal(err)
		}
		again, err := client.CommitMessages(ctx, c, "once", payloadsFor("orders", payload))
		if err != nil || again.Tables[0].SnapshotID != first.Tables[0].SnapshotID {
			t.Fatalf("repeat under the same commit id: %+v, %v", again, err)
		}
		_, err = client.CommitMessages(ctx, c, "twice", payloadsFor("orders", payload))
		assertStatus(t, err, codes.FailedPrecondition, "referenced")
		if got := countIn(t, c, "orders"); got != "10" {
			t.Fatalf("%s rows after a replay, want 10", got)
		}
	})
	t.Run("paimon", func(t *testing.T) {
		gs := paimonGateways(t, t.TempDir(), 1)
		c := gs[0].flightClient(t)
		payload := prepareIn(t, c, pmIngest("orders", true, map[string]string{"bucket": "2", "bucket-key": "id"}), 0, 10)
		var first, again committedReply
		if err := doAction(ctx, c, "CommitMessages", pmMessages("once", "orders", payload), &first); err != nil {
			t.Fatal(err)
		}
		if err := doAction(ctx, c, "CommitMessages", pmMessages("once", "orders", payload), &again); err != nil || again.Tables[0].SnapshotID != first.Tables[0].SnapshotID {
			t.Fatalf("repeat under the same commit id: %+v, %v", again, err)
		}
		assertStatus(t, doAction(ctx, c, "CommitMessages", pmMessages("twice", "orders", payload), nil), codes.FailedPrecondition, "referenced")
		if got := queryOne(t, gs[0], "SELECT count(*) FROM pm.default.orders"); got != "10" {
			t.Fatalf("%s rows after a replay, want 10", got)
		}
	})
}
