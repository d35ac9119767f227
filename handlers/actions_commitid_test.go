package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/iceberg"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/paimon"
	"github.com/flightgw/flightgw/codec/envelope"
	"github.com/flightgw/flightgw/txn"
)

// replicas are two gateways (two handlers, each with its own provider)
// sharing one warehouse and the signing key, as two processes would.
type replicas struct {
	t    *testing.T
	kind string
	ps   [2]catalogs.Provider
	hs   [2]*Handler
	id   catalogs.TableIdent
	sc   *arrow.Schema
	ctx  context.Context
}

func openReplicas(t *testing.T, kind string) *replicas {
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: "coord", Realm: auth.DefaultRealm})
	r := &replicas{t: t, kind: kind, ctx: ctx, id: catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"},
		sc: arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)}
	dir := t.TempDir()
	for i := range r.ps {
		var (
			p   catalogs.Provider
			err error
		)
		switch kind {
		case "iceberg":
			props, perr := iceberg.EmbeddedProperties(dir)
			if perr != nil {
				t.Fatal(perr)
			}
			p, err = iceberg.Open(ctx, iceberg.EmbeddedCatalogName, props)
		case "paimon":
			p, err = paimon.Open(ctx, "lake", map[string]string{paimon.PropWarehouse: dir, paimon.PropCreateNamespaces: "default",
				lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20"})
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.(catalogs.Closer).Close() })
		h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("commit-id-key"),
			Catalogs: []Catalog{{Name: "lake", Type: kind, Realm: auth.DefaultRealm, Provider: p}}})
		if err != nil {
			t.Fatal(err)
		}
		r.ps[i], r.hs[i] = p, h
	}
	if _, err := r.ps[0].(catalogs.TableManager).CreateTable(ctx, r.id, r.sc, nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// payload stages n rows and seals them as a PrepareCommit would.
func (r *replicas) payload(n int) []byte {
	p, _ := r.staged(n)
	return p
}

// staged is payload, with the receipts inside it.
func (r *replicas) staged(n int) ([]byte, []catalogs.WriteReceipt) {
	r.t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, r.sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rc, err := r.ps[0].WriteBatch(r.ctx, r.id, rec)
	if err != nil {
		r.t.Fatal(err)
	}
	rs := []catalogs.WriteReceipt{rc}
	return r.seal(rs, time.Now()), rs
}

// seal seals receipts as PrepareCommit does, prepared at at.
func (r *replicas) seal(rs []catalogs.WriteReceipt, at time.Time) []byte {
	r.t.Helper()
	version, inner, err := envelope.ReceiptsVersion, []byte(nil), error(nil)
	if codec, ok := r.ps[0].(catalogs.PayloadCodec); ok {
		version, inner, err = codec.EncodePayload(r.ctx, r.id, rs)
	} else {
		ers := make([]envelope.Receipt, len(rs))
		for i, x := range rs {
			ers[i] = envelope.Receipt{Metadata: x.Metadata, RowCount: x.RowCount, ByteCount: x.ByteCount}
		}
		inner, err = envelope.EncodeReceipts(ers)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	payload, err := envelope.Seal(envelope.Envelope{Kind: r.kind, SerializerVersion: version, Table: identity(r.id),
		CommitUser: "default/coord", PreparedAt: at, Payload: inner}, r.hs[0].messageKey())
	if err != nil {
		r.t.Fatal(err)
	}
	return payload
}

// resealed seals receipts again, a second later: another payload naming
// the same files.
func (r *replicas) resealed(rs []catalogs.WriteReceipt) []byte {
	return r.seal(rs, time.Now().Add(time.Second))
}

// commit runs CommitMessages on replica i.
func (r *replicas) commit(i int, commitID string, payloads ...[]byte) (commitResponse, error) {
	b, _ := json.Marshal(map[string]any{"commit_id": commitID, "tables": []map[string]any{
		{"catalog": "lake", "schema": "default", "table": "t", "payloads": payloads}}})
	res, err := r.hs[i].commitMessages(r.ctx, b)
	if err != nil {
		return commitResponse{}, err
	}
	return res.(commitResponse), nil
}

func (r *replicas) status(commitID string) statusResponse {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"catalog": "lake", "schema": "default", "table": "t", "commit_id": commitID})
	res, err := r.hs[1].commitStatus(r.ctx, b)
	if err != nil {
		r.t.Fatal(err)
	}
	return res.(statusResponse)
}

func wantCode(t *testing.T, what string, err error, code codes.Code, says ...string) {
	t.Helper()
	if Code(err) != code {
		t.Fatalf("%s: %v (%s), want %s", what, err, Code(err), code)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s: %v, want it to say %q", what, err, s)
		}
	}
}

// TestCommitIDNamesOneFileSet: a commit id names exactly one set of files,
// on Iceberg and Paimon. Repeated with its payloads it answers the landed
// commit, with the rows that landed; with other payloads (or more) it is
// refused FailedPrecondition naming the id and the snapshot, nothing
// committed. Before, the reused id answered OK with the first snapshot
// and the new payloads' rows, which never landed.
func TestCommitIDNamesOneFileSet(t *testing.T) {
	for _, kind := range []string{"iceberg", "paimon"} {
		t.Run(kind, func(t *testing.T) {
			r := openReplicas(t, kind)
			a, b := r.payload(3), r.payload(5)
			first, err := r.commit(0, "j1", a)
			if err != nil || len(first.Tables) != 1 || first.Tables[0].Rows != 3 {
				t.Fatalf("CommitMessages j1 [a]: %+v, %v", first, err)
			}
			snap := first.Tables[0].SnapshotID
			again, err := r.commit(1, "j1", a)
			if err != nil || again.Tables[0].SnapshotID != snap || again.Tables[0].Rows != 3 {
				t.Fatalf("CommitMessages j1 [a] repeated on another replica: %+v, %v; want snapshot %d, 3 rows", again, err, snap)
			}
			for _, c := range []struct {
				name     string
				payloads [][]byte
			}{{"other payloads", [][]byte{b}}, {"more payloads", [][]byte{a, b}}} {
				for i := range 2 {
					_, err := r.commit(i, "j1", c.payloads...)
					wantCode(t, fmt.Sprintf("j1 with %s on replica %d", c.name, i), err, codes.FailedPrecondition, "j1", fmt.Sprint(snap))
				}
			}
			if st := r.status("j1"); !st.Landed || st.SnapshotID != snap || st.Rows != 3 {
				t.Fatalf("GetCommitStatus j1: %+v, want snapshot %d with 3 rows", st, snap)
			}
			// b was never committed: it lands under its own id.
			if res, err := r.commit(1, "j2", b); err != nil || res.Tables[0].Rows != 5 {
				t.Fatalf("CommitMessages j2 [b]: %+v, %v", res, err)
			}
		})
	}
}

// TestCommitIDRace: two coordinators on two replicas commit one commit id
// with different payloads at the same instant: exactly one lands, the
// other is refused FailedPrecondition, and the refused payload's files
// are in no snapshot. Before, both answered OK (the second with the
// first's snapshot and its own rows, which never landed).
func TestCommitIDRace(t *testing.T) {
	for _, kind := range []string{"iceberg", "paimon"} {
		t.Run(kind, func(t *testing.T) {
			r := openReplicas(t, kind)
			for trial := range 4 {
				id := fmt.Sprintf("race-%d", trial)
				var (
					payloads [2][]byte
					receipts [2][]catalogs.WriteReceipt
					res      [2]commitResponse
					errs     [2]error
					wg       sync.WaitGroup
				)
				for i := range 2 {
					payloads[i], receipts[i] = r.staged(2 + 2*i)
				}
				start := make(chan struct{})
				for i := range 2 {
					wg.Go(func() {
						<-start
						res[i], errs[i] = r.commit(i, id, payloads[i])
					})
				}
				close(start)
				wg.Wait()
				won := -1
				for i, err := range errs {
					switch {
					case err == nil && won >= 0:
						t.Fatalf("trial %d: both coordinators answered OK: %+v, %+v", trial, res[0], res[1])
					case err == nil:
						won = i
					default:
						wantCode(t, fmt.Sprintf("trial %d: the other coordinator", trial), err, codes.FailedPrecondition, id)
					}
				}
				if won < 0 {
					t.Fatalf("trial %d: neither landed: %v, %v", trial, errs[0], errs[1])
				}
				lost := 1 - won
				if st := r.status(id); !st.Landed || st.SnapshotID != res[won].Tables[0].SnapshotID || st.Rows != res[won].Tables[0].Rows ||
					st.Rows != uint64(2+2*won) {
					t.Fatalf("trial %d: GetCommitStatus %+v, the winner (%d rows) answered %+v", trial, st, 2+2*won, res[won])
				}
				if err := r.ps[0].(catalogs.ReceiptChecker).CheckUnreferenced(r.ctx, r.id, receipts[lost]); err != nil {
					t.Fatalf("trial %d: the refused payload's files are in a snapshot: %v", trial, err)
				}
			}
		})
	}
}

// TestCommitMessagesFileTwice: one request naming a payload twice, or two
// payloads naming the same files, is InvalidArgument and commits nothing
// (Iceberg and Paimon). Before, Iceberg committed the file once and
// answered its rows twice (10 rows landed, "rows": 20 told).
func TestCommitMessagesFileTwice(t *testing.T) {
	for _, kind := range []string{"iceberg", "paimon"} {
		t.Run(kind, func(t *testing.T) {
			r := openReplicas(t, kind)
			b, rs := r.staged(5)
			_, err := r.commit(0, "j", b, b)
			wantCode(t, "a payload twice", err, codes.InvalidArgument, "payloads 0 and 1")
			// The same files sealed twice (two payloads, other bytes).
			_, err = r.commit(0, "j", b, r.resealed(rs))
			wantCode(t, "a file twice", err, codes.InvalidArgument, "twice")
			if st := r.status("j"); st.Landed {
				t.Fatalf("GetCommitStatus j after refusals: %+v", st)
			}
			if res, err := r.commit(1, "j", b); err != nil || res.Tables[0].Rows != 5 {
				t.Fatalf("CommitMessages j [b]: %+v, %v; want 5 rows", res, err)
			}
		})
	}
}
