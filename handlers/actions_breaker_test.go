package handlers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/iceberg"
	"github.com/flightgw/flightgw/codec/envelope"
	"github.com/flightgw/flightgw/txn"
)

// TestClientFaultsKeepBreakerClosed: a client aborting and committing an
// already-aborted payload again and again is refused InvalidArgument
// each time, and does not open the catalog's storage breaker: another
// principal's ingest into the catalog still lands. Before, the missing
// files counted as a storage outage (retried, and counted by the
// breaker), and two such calls made every ingest of every principal
// fail Unavailable for remote.breaker.open-ms.
func TestClientFaultsKeepBreakerClosed(t *testing.T) {
	alice := auth.NewContext(context.Background(), auth.Principal{Name: "alice", Realm: auth.DefaultRealm})
	bob := auth.NewContext(context.Background(), auth.Principal{Name: "bob", Realm: auth.DefaultRealm})
	props, err := iceberg.EmbeddedProperties(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := iceberg.Open(alice, iceberg.EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	theirs := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "bobs"}
	for _, tbl := range []catalogs.TableIdent{id, theirs} {
		if _, err := p.CreateTable(alice, tbl, sc, nil); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("breaker-key"),
		Catalogs: []Catalog{{Name: "lake", Type: "iceberg", Realm: auth.DefaultRealm, Provider: p}}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(ctx context.Context, tbl catalogs.TableIdent) catalogs.WriteReceipt {
		t.Helper()
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
		rec := b.NewRecordBatch()
		defer rec.Release()
		r, err := p.WriteBatch(ctx, tbl, rec)
		if err != nil {
			t.Fatalf("write into %s: %v", tbl, err)
		}
		return r
	}
	r := write(alice, id)
	inner, err := envelope.EncodeReceipts([]envelope.Receipt{{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := envelope.Seal(envelope.Envelope{Kind: "iceberg", SerializerVersion: envelope.ReceiptsVersion,
		Table: identity(id), CommitUser: "default/alice", PreparedAt: time.Now(), Payload: inner}, h.messageKey())
	if err != nil {
		t.Fatal(err)
	}
	body := func(commitID string) []byte {
		b, _ := json.Marshal(map[string]any{"commit_id": commitID, "tables": []map[string]any{
			{"catalog": "lake", "schema": "default", "table": "t", "payloads": [][]byte{payload}}}})
		return b
	}
	if _, err := h.abortMessages(alice, body("")); err != nil {
		t.Fatalf("first AbortMessages: %v", err)
	}
	for i := range 4 {
		if _, err := h.abortMessages(alice, body("")); Code(err) != codes.InvalidArgument {
			t.Fatalf("AbortMessages %d of an aborted payload: %v (%s), want InvalidArgument", i+2, err, Code(err))
		}
		if _, err := h.commitMessages(alice, body("again")); Code(err) != codes.InvalidArgument {
			t.Fatalf("CommitMessages %d of an aborted payload: %v (%s), want InvalidArgument", i+1, err, Code(err))
		}
	}
	for _, b := range p.Breakers() {
		if b.State != catalogs.BreakerClosed {
			t.Errorf("breaker %s is %d after client faults, want closed", b.Name, b.State)
		}
	}
	if _, err := p.Commit(bob, theirs, []catalogs.WriteReceipt{write(bob, theirs)}); err != nil {
		t.Fatalf("another principal's ingest after the client faults: %v", err)
	}
}
