package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/envelope"
	"github.com/flightgw/flightgw/txn"
)

// receiptsCodec is the catalogs.PayloadCodec of a test double: the
// receipts themselves, under kind "iceberg".
type receiptsCodec struct{}

func (receiptsCodec) PayloadKind() string { return "iceberg" }

func (receiptsCodec) EncodePayload(_ context.Context, _ catalogs.TableIdent, rs []catalogs.WriteReceipt) (int, []byte, error) {
	ers := make([]envelope.Receipt, len(rs))
	for i, r := range rs {
		ers[i] = envelope.Receipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	b, err := envelope.EncodeReceipts(ers)
	return envelope.ReceiptsVersion, b, err
}

func (receiptsCodec) DecodePayload(_ context.Context, t catalogs.TableIdent, _ int, b []byte) ([]catalogs.WriteReceipt, error) {
	ers, err := envelope.DecodeReceipts(b)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %v", t, err)
	}
	out := make([]catalogs.WriteReceipt, len(ers))
	for i, r := range ers {
		out[i] = catalogs.WriteReceipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	return out, nil
}

// raceProvider is a backend whose staged files are a set, for
// TestCommitAbortRace: its reference check of an abort, once passed,
// waits for the test, so that a CommitMessages can run in the window
// between the check and the deletion.
type raceProvider struct {
	receiptsCodec
	mu        sync.Mutex
	staged    map[string]bool // files on storage
	committed map[string]bool // files a snapshot references
	commits   map[string]catalogs.CommitOutcome
	destroyed bool // a committed file was deleted
	inWindow  chan struct{}
	release   chan struct{}
	waited    atomic.Bool // the first check waits
}

type raceReceipt struct {
	File string `json:"file"`
}

func (p *raceProvider) files(rs []catalogs.WriteReceipt) ([]string, error) {
	var out []string
	for i, r := range rs {
		var m raceReceipt
		if err := json.Unmarshal(r.Metadata, &m); err != nil || m.File == "" {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "receipt %d is not one of this catalog's", i)
		}
		out = append(out, m.File)
	}
	return out, nil
}

func (p *raceProvider) GetTableSpec(context.Context, catalogs.TableIdent) (catalogs.TableSpec, error) {
	return catalogs.TableSpec{Schema: arrow.NewSchema(nil, nil)}, nil
}

func (p *raceProvider) WriteBatch(context.Context, catalogs.TableIdent, arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	return catalogs.WriteReceipt{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "no writes")
}

func (p *raceProvider) Commit(ctx context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return p.CommitOnce(ctx, t, "", rs)
}

func (p *raceProvider) GetSecurityContext(context.Context, catalogs.TableIdent) (catalogs.SecurityContext, error) {
	return catalogs.SecurityContext{}, nil
}

func (p *raceProvider) CommitOnce(_ context.Context, _ catalogs.TableIdent, id string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	fs, err := p.files(rs)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if out, ok := p.commits[id]; ok {
		return out, nil
	}
	for _, f := range fs {
		p.committed[f] = true
	}
	out := catalogs.CommitOutcome{SnapshotID: int64(len(p.commits) + 1), CommittedAt: time.Now()}
	p.commits[id] = out
	return out, nil
}

func (p *raceProvider) FindCommit(_ context.Context, _ catalogs.TableIdent, id string) (catalogs.CommitRecord, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, ok := p.commits[id]
	return catalogs.CommitRecord{Outcome: out}, ok, nil
}

func (p *raceProvider) CheckReceipts(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	fs, err := p.files(rs)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range fs {
		if !p.staged[f] {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: file %s does not exist", t, f)
		}
	}
	return nil
}

func (p *raceProvider) CheckUnreferenced(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	fs, err := p.files(rs)
	if err != nil {
		return err
	}
	p.mu.Lock()
	for _, f := range fs {
		if p.committed[f] {
			p.mu.Unlock()
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: file %s is referenced", t, f)
		}
	}
	p.mu.Unlock()
	if p.waited.CompareAndSwap(false, true) {
		close(p.inWindow)
		<-p.release
	}
	return nil
}

func (p *raceProvider) Discard(_ context.Context, _ catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	fs, err := p.files(rs)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range fs {
		if p.committed[f] {
			p.destroyed = true
		}
		delete(p.staged, f)
	}
	return nil
}

// TestCommitAbortRace: an AbortMessages and a CommitMessages of the same
// payload on one replica do not interleave. Without the table's lock, the
// commit landed between the abort's reference check and its deletion,
// and the abort then deleted files the new snapshot references. With it,
// the commit waits, finds the files gone and is refused.
func TestCommitAbortRace(t *testing.T) {
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: "race", Realm: auth.DefaultRealm})
	p := &raceProvider{staged: map[string]bool{"f1": true}, committed: map[string]bool{}, commits: map[string]catalogs.CommitOutcome{},
		inWindow: make(chan struct{}), release: make(chan struct{})}
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("race-key"),
		Catalogs: []Catalog{{Name: "lake", Type: "iceberg", Realm: auth.DefaultRealm, Provider: p}}})
	if err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	inner, err := envelope.EncodeReceipts([]envelope.Receipt{{Metadata: json.RawMessage(`{"file": "f1"}`), RowCount: 1}})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := envelope.Seal(envelope.Envelope{Kind: "iceberg", SerializerVersion: envelope.ReceiptsVersion,
		Table: identity(id), CommitUser: "default/race", PreparedAt: time.Now(), Payload: inner}, h.messageKey())
	if err != nil {
		t.Fatal(err)
	}
	body := func(commitID string) []byte {
		b, _ := json.Marshal(map[string]any{"commit_id": commitID, "tables": []map[string]any{
			{"catalog": "lake", "schema": "default", "table": "t", "payloads": [][]byte{payload}}}})
		return b
	}
	aborted := make(chan error, 1)
	go func() {
		_, err := h.abortMessages(ctx, body(""))
		aborted <- err
	}()
	// An abort that errors before its reference check never enters the
	// window: fail with its error rather than wait forever.
	select {
	case <-p.inWindow:
	case err := <-aborted:
		t.Fatalf("AbortMessages returned before its reference check: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("AbortMessages never reached its reference check")
	}
	committed := make(chan error, 1)
	go func() {
		_, err := h.commitMessages(ctx, body("c1"))
		committed <- err
	}()
	done := false
	select {
	case <-committed:
		t.Error("a CommitMessages ran while an AbortMessages of its table was between its check and its deletion")
		done = true
	case <-time.After(200 * time.Millisecond):
	}
	close(p.release)
	if err := <-aborted; err != nil {
		t.Errorf("AbortMessages: %v", err)
	}
	if !done {
		select {
		case err := <-committed:
			if Code(err) != codes.InvalidArgument {
				t.Errorf("CommitMessages after the abort: %v, want InvalidArgument (its files are gone)", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("CommitMessages never ran")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.destroyed {
		t.Fatal("the abort deleted a file the commit made a snapshot reference")
	}
}

// codecProvider is a raceProvider whose payloads go through a
// catalogs.PayloadCodec that fails as its storage would.
type codecProvider struct {
	*raceProvider
	decodeErr error
}

func (p codecProvider) PayloadKind() string { return "paimon" }

func (p codecProvider) EncodePayload(context.Context, catalogs.TableIdent, []catalogs.WriteReceipt) (int, []byte, error) {
	return 0, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "no encode")
}

func (p codecProvider) DecodePayload(context.Context, catalogs.TableIdent, int, []byte) ([]catalogs.WriteReceipt, error) {
	return nil, p.decodeErr
}

// TestPayloadBackendFault: a backend that cannot decode a payload because
// its storage is down is Unavailable (retry later), not InvalidArgument
// (the payload is bad); one that finds the payload bad is InvalidArgument
// naming the payload.
func TestPayloadBackendFault(t *testing.T) {
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: "codec", Realm: auth.DefaultRealm})
	for _, c := range []struct {
		err  error
		code codes.Code
	}{
		{catalogs.Errorf(catalogs.ErrUnavailable, "table lake.default.t: storage: connection refused"), codes.Unavailable},
		{catalogs.Errorf(catalogs.ErrInvalidArgument, "table lake.default.t: commit messages: truncated"), codes.InvalidArgument},
	} {
		p := codecProvider{raceProvider: &raceProvider{staged: map[string]bool{}, committed: map[string]bool{}, commits: map[string]catalogs.CommitOutcome{}}, decodeErr: c.err}
		h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("codec-key"),
			Catalogs: []Catalog{{Name: "lake", Type: "paimon", Realm: auth.DefaultRealm, Provider: p}}})
		if err != nil {
			t.Fatal(err)
		}
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
		payload, err := envelope.Seal(envelope.Envelope{Kind: "paimon", SerializerVersion: 11,
			Table: identity(id), CommitUser: "default/codec", PreparedAt: time.Now(), Payload: []byte{0, 0, 0, 0}}, h.messageKey())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"commit_id": "c1", "tables": []map[string]any{
			{"catalog": "lake", "schema": "default", "table": "t", "payloads": [][]byte{payload}}}})
		_, err = h.commitMessages(ctx, b)
		if got := Code(err); got != c.code || !strings.Contains(err.Error(), "payload 0") {
			t.Errorf("decode failing with %v: %v (%s), want %s naming payload 0", c.err, err, got, c.code)
		}
	}
}
