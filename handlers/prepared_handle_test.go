package handlers

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/txn"
)

func TestPreparedHandle(t *testing.T) {
	h := ticketHandler(t, "k1")
	ph := preparedHandle{ID: "s1", SQL: "SELECT ?", Owner: "default/anonymous", TxnID: []byte{0, 0xff, 'x'}, Params: []byte("ipc"), Bind: "b3"}
	raw, err := h.signPreparedHandle(ph)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("fgwp1.")) {
		t.Fatalf("handle %q", raw)
	}
	got, err := h.openPreparedHandle(raw, "default/anonymous")
	if err != nil || got.ID != "s1" || got.SQL != "SELECT ?" || !bytes.Equal(got.TxnID, ph.TxnID) || string(got.Params) != "ipc" || got.Bind != "b3" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// Another replica with the same key opens it.
	if _, err := ticketHandler(t, "k1").openPreparedHandle(raw, "default/anonymous"); err != nil {
		t.Fatalf("same key: %v", err)
	}

	tkt, err := h.signTicket(ticket{ID: "q", SQL: "SELECT 1", Owner: "default/anonymous", Expires: time.Now().Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	// The same payload and MAC under the other prefix: the MAC covers the
	// prefix, so neither opens as the other.
	ticketAsHandle := append([]byte("fgwp1."), tkt[len("fgw1."):]...)
	handleAsTicket := append([]byte("fgw1."), raw[len("fgwp1."):]...)
	tampered := bytes.Replace(raw, []byte("fgwp1.e"), []byte("fgwp1.f"), 1)
	noID, _ := h.signPreparedHandle(preparedHandle{SQL: "SELECT 1", Owner: "default/anonymous"})
	cases := []struct {
		name  string
		h     *Handler
		raw   []byte
		owner string
		code  codes.Code
	}{
		{"other key", ticketHandler(t, "k2"), raw, "default/anonymous", codes.Unauthenticated},
		{"tampered", h, tampered, "default/anonymous", codes.Unauthenticated},
		{"other owner", h, raw, "sales/alice", codes.PermissionDenied},
		{"a ticket", h, tkt, "default/anonymous", codes.InvalidArgument},
		{"a ticket re-prefixed", h, ticketAsHandle, "default/anonymous", codes.Unauthenticated},
		{"random handle of old", h, []byte("0123456789abcdef0123456789abcdef"), "default/anonymous", codes.InvalidArgument},
		{"no signature", h, []byte("fgwp1.abc"), "default/anonymous", codes.InvalidArgument},
		{"empty", h, nil, "default/anonymous", codes.InvalidArgument},
		{"no id", h, noID, "default/anonymous", codes.InvalidArgument},
	}
	for _, c := range cases {
		if _, err := c.h.openPreparedHandle(c.raw, c.owner); status.Code(err) != c.code {
			t.Errorf("%s: %v, want %v", c.name, err, c.code)
		}
	}
	// A handle is not a ticket.
	for _, r := range [][]byte{raw, handleAsTicket} {
		if _, err := h.openTicket(r, "default/anonymous", time.Now()); err == nil {
			t.Errorf("handle %q opened as a ticket", r)
		}
	}
	if _, err := h.openTicket(handleAsTicket, "default/anonymous", time.Now()); status.Code(err) != codes.Unauthenticated {
		t.Errorf("handle re-prefixed as a ticket: %v", err)
	}
}

// paramReader is a parameter stream of the given batches.
func paramReader(recs ...arrow.RecordBatch) *batchSource {
	i := -1
	return &batchSource{
		schema: recs[0].Schema(),
		next:   func() bool { i++; return i < len(recs) },
		batch:  func() arrow.RecordBatch { return recs[i] },
		err:    func() error { return nil },
		close:  func() {},
	}
}

func int64Row(t *testing.T, vals ...int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vals, nil)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "$1", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(len(vals)))
}

func firstInt(t *testing.T, rec arrow.RecordBatch) int64 {
	t.Helper()
	if rec == nil {
		t.Fatal("no parameters")
	}
	defer rec.Release()
	return rec.Column(0).(*array.Int64).Value(0)
}

// TestPreparedBindings: binding returns a handle carrying the row; the
// parameters used are the handle's unless this gateway bound parameters
// to that very handle since (a client that ignores returned handles);
// close drops the local entry but the handle still names the statement.
func TestPreparedBindings(t *testing.T) {
	h := ticketHandler(t, "k1")
	other := ticketHandler(t, "k1") // another replica
	ctx := auth.NewContext(context.Background(), auth.Principal{Realm: "default", Name: "anonymous"})
	st := &prepared{id: randomID(), owner: "default/anonymous", sql: "SELECT ?",
		dataset: emptySchema, params: arrow.NewSchema([]arrow.Field{{Name: "$1", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)}
	for _, g := range []*Handler{h, other} {
		cp := *st
		if _, err := g.cachePrepared(&cp); err != nil {
			t.Fatal(err)
		}
	}
	h0, err := h.signPreparedHandle(preparedHandle{ID: st.id, SQL: st.sql, Owner: st.owner})
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(handle []byte) *pb.CommandPreparedStatementQuery {
		return &pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle}
	}
	bind := func(g *Handler, handle []byte, recs ...arrow.RecordBatch) []byte {
		t.Helper()
		out, err := g.DoPutPreparedStatementQuery(ctx, cmd(handle), paramReader(recs...), nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	params := func(g *Handler, handle []byte) int64 {
		t.Helper()
		s, ph, err := g.lookup(ctx, handle)
		if err != nil {
			t.Fatal(err)
		}
		if s.id != st.id || !g.cached(s) {
			t.Fatal("lookup missed the local entry")
		}
		rec, err := g.boundParams(s, ph)
		if err != nil {
			t.Fatal(err)
		}
		return firstInt(t, rec)
	}
	// The last row of the last batch is bound.
	h1 := bind(h, h0, int64Row(t, 1, 2), int64Row(t, 7))
	ph1, err := h.openPreparedHandle(h1, "default/anonymous")
	if err != nil || ph1.Bind == "" || ph1.ID != st.id {
		t.Fatalf("bound handle: %+v %v", ph1, err)
	}
	if got := params(h, h1); got != 7 {
		t.Errorf("bound handle runs with %d, want 7", got)
	}
	// A client that keeps the first handle gets the local binding.
	if got := params(h, h0); got != 7 {
		t.Errorf("first handle runs with %d, want 7", got)
	}
	// The handle carries the row on its own: another replica reads it
	// from there.
	if got := params(other, h1); got != 7 {
		t.Errorf("another replica reads %d from the handle, want 7", got)
	}
	// A binding made on another replica from h1 runs here with its own
	// parameters, not the older local ones.
	h2 := bind(other, h1, int64Row(t, 42))
	if got := params(h, h2); got != 42 {
		t.Errorf("handle bound elsewhere runs with %d, want 42", got)
	}
	// JDBC 18.3.0 binds with the created handle every time and runs the
	// handle each binding returns. Bound here twice, then on the other
	// replica (where the statement's binding count is lower): the handle
	// wins over the stale local binding.
	bind(h, h0, int64Row(t, 8))
	hx := bind(other, h0, int64Row(t, 3))
	if got := params(h, hx); got != 3 {
		t.Errorf("JDBC-style handle bound elsewhere runs with %d, want 3", got)
	}
	// A client that binds with h1 and keeps presenting h1 gets its newer
	// local binding.
	bind(h, h1, int64Row(t, 9))
	if got := params(h, h1); got != 9 {
		t.Errorf("h1 rebound here runs with %d, want 9", got)
	}

	// Over the limit: refused, naming it.
	big := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	big.Append(make([]byte, MaxBoundParamsBytes+1))
	col := big.NewArray()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "$1", Type: arrow.BinaryTypes.Binary}}, nil), []arrow.Array{col}, 1)
	_, err = h.DoPutPreparedStatementQuery(ctx, cmd(h0), paramReader(rec), nil)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), fmt.Sprint(MaxBoundParamsBytes)) {
		t.Errorf("oversized parameters: %v", err)
	}
	if got := params(h, h1); got != 9 {
		t.Errorf("a refused binding replaced the parameters: %d", got)
	}

	// Another principal: PermissionDenied, like tickets.
	alice := auth.NewContext(context.Background(), auth.Principal{Realm: "sales", Name: "alice"})
	if _, _, err := h.lookup(alice, h1); status.Code(err) != codes.PermissionDenied {
		t.Errorf("other principal: %v", err)
	}
	if err := h.ClosePreparedStatement(alice, &pb.ActionClosePreparedStatementRequest{PreparedStatementHandle: h1}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("other principal closes: %v", err)
	}
	// Close drops the local entry; the handle then has to be rebuilt
	// (here without an engine: Unimplemented, not NotFound).
	if err := h.ClosePreparedStatement(ctx, &pb.ActionClosePreparedStatementRequest{PreparedStatementHandle: h1}); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.sql.prepared[st.id]; ok {
		t.Error("closed statement still cached")
	}
	if _, _, err := h.lookup(ctx, h1); status.Code(err) != codes.Unimplemented {
		t.Errorf("closed statement looked up: %v", err)
	}
	// Closing again, or on another replica, is fine.
	for _, g := range []*Handler{h, other} {
		if err := g.ClosePreparedStatement(ctx, &pb.ActionClosePreparedStatementRequest{PreparedStatementHandle: h1}); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}

// TestPreparedCacheLimit: when the map is full, statements rebuilt from
// handles make room first, then the oldest statements of the principal
// holding the most; another principal's statements stay cached.
func TestPreparedCacheLimit(t *testing.T) {
	h := ticketHandler(t, "k1")
	for i := range MaxPreparedStatements {
		owner := "hog"
		if i < 10 {
			owner = "other"
		}
		if _, err := h.cachePrepared(&prepared{id: fmt.Sprint("r", i), owner: owner, session: fmt.Sprint("s", i), fromHandle: i%2 == 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range MaxPreparedStatements / 2 {
		if _, err := h.cachePrepared(&prepared{id: fmt.Sprint("c", i), owner: "hog", session: "hog"}); err != nil {
			t.Fatalf("created statement %d with rebuilt ones to evict: %v", i, err)
		}
	}
	// Full of created statements: the hog's oldest go, never another's.
	st := &prepared{id: "newcomer", owner: "new", session: "new"}
	if got, err := h.cachePrepared(st); err != nil || got != st || !h.cached(st) {
		t.Fatalf("a new principal's statement with the map full: %v cached=%v", err, h.cached(st))
	}
	if _, ok := h.sql.prepared["r10"]; ok {
		t.Error("the hog's oldest statement was not the one evicted")
	}
	for i := 2; i < 10; i += 2 {
		if _, ok := h.sql.prepared[fmt.Sprint("r", i)]; !ok {
			t.Errorf("another principal's statement r%d was evicted", i)
		}
	}
	if len(h.sql.prepared) != MaxPreparedStatements {
		t.Errorf("%d cached, want %d", len(h.sql.prepared), MaxPreparedStatements)
	}
}

// TestPreparedPerSession: a session keeps at most PreparedPerSession
// statements (one more created is ResourceExhausted naming the key, one
// more rebuilt is used uncached); other sessions are not affected; the
// end of the session frees its statements.
func TestPreparedPerSession(t *testing.T) {
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("k"), PreparedPerSession: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := h.cachePrepared(&prepared{id: fmt.Sprint("a", i), owner: "alice", session: "peer:a"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = h.cachePrepared(&prepared{id: "a3", owner: "alice", session: "peer:a"})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limits.prepared_per_session = 3") {
		t.Fatalf("one over the session's share: %v", err)
	}
	rebuilt := &prepared{id: "r", owner: "alice", session: "peer:a", fromHandle: true}
	if got, err := h.cachePrepared(rebuilt); err != nil || got != rebuilt || h.cached(rebuilt) {
		t.Fatalf("rebuilt over the share: %v cached=%v", err, h.cached(rebuilt))
	}
	if _, err := h.cachePrepared(&prepared{id: "b0", owner: "bob", session: "peer:b"}); err != nil {
		t.Fatalf("another session: %v", err)
	}
	h.SessionEnded("peer:a")
	if len(h.sql.prepared) != 1 || h.sql.prepared["b0"] == nil || len(h.sql.sessions.prepared) != 1 {
		t.Fatalf("after the session ended: %v %v", h.sql.prepared, h.sql.sessions.prepared)
	}
	if _, err := h.cachePrepared(&prepared{id: "a4", owner: "alice", session: "peer:a2"}); err != nil {
		t.Fatalf("a new session: %v", err)
	}
}

// FuzzOpenPreparedHandle: no input makes openPreparedHandle panic, and
// only a handle this key signed opens.
func FuzzOpenPreparedHandle(f *testing.F) {
	h := ticketHandler(f, "fuzz-key")
	good, _ := h.signPreparedHandle(preparedHandle{ID: "s", SQL: "SELECT ?", Owner: "o", Params: []byte{1, 2, 3}, Bind: "b"})
	tkt, _ := h.signTicket(ticket{SQL: "SELECT 1", Owner: "o", Expires: time.Now().Add(time.Hour).Unix()})
	f.Add(good)
	f.Add(tkt)
	// A newline in the MAC: base64 decoding skips it, the comparison not.
	f.Add(append(bytes.Clone(good[:len(good)-10]), append([]byte("\n"), good[len(good)-10:]...)...))
	f.Add([]byte("fgwp1.."))
	f.Add([]byte("fgwp1.e30.AAAA"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ph, err := h.openPreparedHandle(raw, "o")
		if err == nil && !bytes.Equal(raw, good) {
			resigned, _ := h.signPreparedHandle(ph)
			if !bytes.Equal(resigned, raw) {
				t.Fatalf("accepted a handle it did not sign: %q", raw)
			}
		}
		// Bound parameters of an opened handle never panic either.
		if err == nil {
			if rec, err := decodeParams(ph.Params, memory.DefaultAllocator); err == nil && rec != nil {
				rec.Release()
			}
		}
	})
}
