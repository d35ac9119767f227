package integration

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/codec/envelope"
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

// TestCommitMessagesFromTheFuture: a payload sealed (by a holder of the
// key) as prepared a day ahead would never expire while the reclaimer
// deletes its files by their own age: it is refused, InvalidArgument
// naming the payload; one a minute ahead (clock skew) commits.
func TestCommitMessagesFromTheFuture(t *testing.T) {
	requireEngine(t)
	const signingKey = "future-key"
	c := startGateway(t, sharedLake(t.TempDir(), signingKey)).flightClient(t)
	ctx := context.Background()
	payload := prepareIn(t, c, modeCreate("orders"), 0, 10)
	key := hmac.New(sha256.New, []byte(signingKey))
	key.Write([]byte("flightgw commit messages v2"))
	at := func(d time.Duration) []byte {
		e, err := envelope.Parse(payload)
		if err != nil {
			t.Fatal(err)
		}
		e.PreparedAt = e.PreparedAt.Add(d)
		b, err := envelope.Seal(e, key.Sum(nil))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	_, err := client.CommitMessages(ctx, c, "future-1", payloadsFor("orders", at(24*time.Hour)))
	assertStatus(t, err, codes.InvalidArgument, "payload 0: prepared at")
	assertStatus(t, err, codes.InvalidArgument, "in the future")
	if _, err := client.CommitMessages(ctx, c, "future-2", payloadsFor("orders", at(time.Minute))); err != nil {
		t.Fatalf("a payload a minute ahead: %v", err)
	}
}

// TestCommitMessagesAfterAbort: payloads aborted (their files deleted)
// and then committed under a new commit id are refused, InvalidArgument
// naming the missing file: a snapshot referencing deleted files would
// break the table for every reader. The table still reads.
func TestCommitMessagesAfterAbort(t *testing.T) {
	requireEngine(t)
	ctx := context.Background()
	t.Run("iceberg", func(t *testing.T) {
		c := startGateway(t, sharedLake(t.TempDir(), "abort-key")).flightClient(t)
		if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 5)), modeCreate("orders")); err != nil {
			t.Fatal(err)
		}
		payload := prepareIn(t, c, modeAppend("orders"), 100, 10)
		if _, err := client.AbortMessages(ctx, c, "", payloadsFor("orders", payload)); err != nil {
			t.Fatal(err)
		}
		_, err := client.CommitMessages(ctx, c, "after-abort", payloadsFor("orders", payload))
		assertStatus(t, err, codes.InvalidArgument, "does not exist")
		if got := countIn(t, c, "orders"); got != "5" {
			t.Fatalf("%s rows, want 5", got)
		}
	})
	t.Run("paimon", func(t *testing.T) {
		gs := paimonGateways(t, t.TempDir(), 1)
		c := gs[0].flightClient(t)
		payload := prepareIn(t, c, pmIngest("orders", true, nil), 0, 10)
		if err := doAction(ctx, c, "AbortMessages", pmMessages("", "orders", payload), nil); err != nil {
			t.Fatal(err)
		}
		assertStatus(t, doAction(ctx, c, "CommitMessages", pmMessages("after-abort", "orders", payload), nil), codes.InvalidArgument, "does not exist")
	})
}
