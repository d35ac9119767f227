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

// clientCodes are the codes a client's request may earn: anything else
// (Internal, Unknown, Unavailable) would blame the gateway for the
// client's bytes.
var clientCodes = map[codes.Code]bool{codes.OK: true, codes.InvalidArgument: true, codes.FailedPrecondition: true,
	codes.NotFound: true, codes.PermissionDenied: true, codes.ResourceExhausted: true, codes.AlreadyExists: true}

// FuzzActionBodies: any body of any distributed-commit action, against a
// gateway with an Iceberg table, is answered or refused with a client's
// code, never a panic. The seeds are real requests carrying a payload
// signed with the gateway's key.
func FuzzActionBodies(f *testing.F) {
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: "fuzz", Realm: auth.DefaultRealm})
	props, err := iceberg.EmbeddedProperties(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	p, err := iceberg.Open(ctx, iceberg.EmbeddedCatalogName, props)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = p.Close() })
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := p.CreateTable(ctx, id, sc, nil); err != nil {
		f.Fatal(err)
	}
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("fuzz-key"),
		Catalogs: []Catalog{{Name: "lake", Type: "iceberg", Realm: auth.DefaultRealm, Provider: p}}})
	if err != nil {
		f.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	r, err := p.WriteBatch(ctx, id, rec)
	rec.Release()
	if err != nil {
		f.Fatal(err)
	}
	inner, err := envelope.EncodeReceipts([]envelope.Receipt{{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}})
	if err != nil {
		f.Fatal(err)
	}
	payload, err := envelope.Seal(envelope.Envelope{Kind: "iceberg", SerializerVersion: envelope.ReceiptsVersion,
		Table: identity(id), CommitUser: "default/fuzz", PreparedAt: time.Now(), Payload: inner}, h.messageKey())
	if err != nil {
		f.Fatal(err)
	}
	tables := []map[string]any{{"catalog": "lake", "schema": "default", "table": "t", "payloads": [][]byte{payload}}}
	for i, body := range []any{
		map[string]any{"transaction_id": "nope"},
		map[string]any{"commit_id": "job-1", "tables": tables},
		map[string]any{"commit_id": "job-2", "tables": tables},
		map[string]any{"catalog": "lake", "schema": "default", "table": "t", "commit_id": "job-1"},
	} {
		raw, err := json.Marshal(body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), raw)
	}
	f.Add(uint8(1), []byte(`{"commit_id": "x", "tables": [{"table": "t", "payloads": ["RkdDTQI="]}, {"table": "t", "payloads": []}]}`))
	run := []func(context.Context, []byte) (any, error){h.prepareCommit, h.commitMessages, h.abortMessages, h.commitStatus}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		_, err := run[int(which)%len(run)](ctx, body)
		if c := Code(err); !clientCodes[c] {
			t.Fatalf("body %q: code %s (%v), not a client's", body, c, err)
		}
	})
}
