package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/txn"
)

// actionStream is the server side of one DoAction call.
type actionStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s actionStream) Context() context.Context  { return s.ctx }
func (s actionStream) Send(*flight.Result) error { return nil }

// messagesBody is a CommitMessages body for lake.default.t whose one
// payload is n bytes of junk (it fails its signature check, once decoded).
func messagesBody(t *testing.T, n int) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"commit_id": "c1", "tables": []map[string]any{
		{"catalog": "lake", "schema": "default", "table": "t", "payloads": [][]byte{make([]byte, n)}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestActionBudget: an action body over limits.max_action_bytes is
// refused ResourceExhausted naming the key before it is decoded (junk
// that would otherwise be InvalidArgument), for each distributed-commit
// action. Actions running at once hold ActionDecodeFactor times their
// bodies of limits.action_memory: with two large CommitMessages running
// (held at their table's lock), twenty more large ones are refused at
// once naming limits.action_memory, never decoded, while a small
// GetCommitStatus still fits; once the running ones return, the budget is
// whole again. Before the budget, every one of them decoded at once.
func TestActionBudget(t *testing.T) {
	const maxBody = 64 << 10
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("budget-key"),
		MaxActionBytes: maxBody, ActionMemory: 2 * ActionDecodeFactor * maxBody,
		Catalogs: []Catalog{{Name: "lake", Type: "iceberg", Realm: auth.DefaultRealm, Provider: &raceProvider{}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := h.WithActions(&flight.BaseFlightServer{})
	as := func(name string) context.Context {
		return auth.NewContext(context.Background(), auth.Principal{Name: name, Realm: auth.DefaultRealm})
	}
	ctx := as("coord")
	doAs := func(ctx context.Context, typ string, body []byte) error {
		return srv.DoAction(&flight.Action{Type: typ, Body: body}, actionStream{ctx: ctx})
	}
	do := func(typ string, body []byte) error { return doAs(ctx, typ, body) }

	junk := []byte("{" + strings.Repeat(" ", maxBody))
	for _, a := range []string{PrepareCommitActionType, CommitMessagesActionType, AbortMessagesActionType, GetCommitStatusActionType} {
		err := do(a, junk)
		if Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limits.max_action_bytes") {
			t.Errorf("%s with a %d-byte body: %v, want ResourceExhausted naming limits.max_action_bytes", a, len(junk), err)
		}
	}

	// Two large commits run, waiting for their table's lock.
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	unlock := h.messages().Lock(id)
	big := messagesBody(t, maxBody/2)
	if len(big) > maxBody {
		t.Fatalf("body of %d bytes", len(big))
	}
	var running sync.WaitGroup
	runErrs := make(chan error, 2)
	// Two coordinators: each principal's share is half the budget.
	for _, who := range []string{"coord-a", "coord-b"} {
		running.Add(1)
		go func() {
			defer running.Done()
			runErrs <- doAs(as(who), CommitMessagesActionType, big)
		}()
	}
	want := int64(2 * ActionDecodeFactor * len(big))
	for deadline := time.Now().Add(5 * time.Second); h.ActionMemoryInUse() < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the running commits hold %d bytes, want %d", h.ActionMemoryInUse(), want)
		}
	}
	var refused sync.WaitGroup
	for i := range 20 {
		refused.Add(1)
		go func() {
			defer refused.Done()
			err := do(CommitMessagesActionType, big)
			if Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limits.action_memory") {
				t.Errorf("commit %d over the budget: %v, want ResourceExhausted naming limits.action_memory", i, err)
			}
		}()
	}
	refused.Wait()
	if got := h.ActionMemoryInUse(); got != want {
		t.Errorf("in use with two running: %d, want %d", got, want)
	}
	status, _ := json.Marshal(map[string]any{"commit_id": "c1", "catalog": "lake", "schema": "default", "table": "t"})
	if err := do(GetCommitStatusActionType, status); Code(err) == codes.ResourceExhausted {
		t.Errorf("a small GetCommitStatus next to the running commits: %v", err)
	}
	unlock()
	running.Wait()
	close(runErrs)
	for err := range runErrs {
		if Code(err) != codes.InvalidArgument {
			t.Errorf("a running commit of a junk payload: %v, want InvalidArgument", err)
		}
	}
	if got := h.ActionMemoryInUse(); got != 0 {
		t.Errorf("in use after every action returned: %d, want 0", got)
	}
}

// TestActionBudgetPerPrincipal: one principal's actions hold at most its
// share of limits.action_memory (half of it): with two large commits of
// alice running, her third is refused naming the key while bob's fits.
// Before the share, alice's third ran.
func TestActionBudgetPerPrincipal(t *testing.T) {
	const maxBody = 64 << 10
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("budget-key"),
		MaxActionBytes: maxBody, ActionMemory: 4 * ActionDecodeFactor * maxBody,
		Catalogs: []Catalog{{Name: "lake", Type: "iceberg", Realm: auth.DefaultRealm, Provider: &raceProvider{}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := h.WithActions(&flight.BaseFlightServer{})
	as := func(name string) context.Context {
		return auth.NewContext(context.Background(), auth.Principal{Name: name, Realm: auth.DefaultRealm})
	}
	do := func(ctx context.Context, body []byte) error {
		return srv.DoAction(&flight.Action{Type: CommitMessagesActionType, Body: body}, actionStream{ctx: ctx})
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	unlock := h.messages().Lock(id)
	big := messagesBody(t, maxBody/2)
	var running sync.WaitGroup
	for range 2 {
		running.Add(1)
		go func() {
			defer running.Done()
			_ = do(as("alice"), big)
		}()
	}
	want := int64(2 * ActionDecodeFactor * len(big))
	for deadline := time.Now().Add(5 * time.Second); h.ActionMemoryInUse() < want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the running commits hold %d bytes, want %d", h.ActionMemoryInUse(), want)
		}
	}
	third := make(chan error, 1)
	go func() { third <- do(as("alice"), big) }()
	thirdDone := false
	select {
	case err := <-third:
		thirdDone = true
		if Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "share") {
			t.Errorf("alice's third commit: %v, want ResourceExhausted naming her share", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("alice's third commit was admitted (it waits for the table lock)")
	}
	bob := make(chan error, 1)
	go func() { bob <- do(as("bob"), big) }()
	for deadline := time.Now().Add(5 * time.Second); h.ActionMemoryInUse() < want*3/2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("bob's commit does not run: %d bytes in use", h.ActionMemoryInUse())
		}
	}
	unlock()
	running.Wait()
	<-bob
	if !thirdDone {
		<-third
	}
	if got := h.ActionMemoryInUse(); got != 0 {
		t.Errorf("in use after every action returned: %d, want 0", got)
	}
}

// TestReserveActionBody: a body about to be received reserves
// limits.max_action_bytes; past the principal's share (half the budget)
// alice's next waits, and fails ResourceExhausted naming the key when the
// wait ends, while bob's is reserved at once; a reservation given back
// lets a waiting one through.
func TestReserveActionBody(t *testing.T) {
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("k"), MaxActionBytes: 1000, ActionMemory: 8000})
	if err != nil {
		t.Fatal(err)
	}
	as := func(name string) context.Context {
		return auth.NewContext(context.Background(), auth.Principal{Name: name, Realm: auth.DefaultRealm})
	}
	var held []func()
	for range 4 { // alice's share: 4 bodies of 1000
		release, err := h.ReserveActionBody(as("alice"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	if _, err := h.ReserveActionBody(as("alice"), 50*time.Millisecond); Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limits.action_memory") {
		t.Fatalf("alice's fifth body: %v, want ResourceExhausted naming limits.action_memory", err)
	}
	release, err := h.ReserveActionBody(as("bob"), 50*time.Millisecond)
	if err != nil {
		t.Fatalf("bob's body: %v", err)
	}
	release()
	waited := make(chan error, 1)
	go func() {
		release, err := h.ReserveActionBody(as("alice"), 5*time.Second)
		if err == nil {
			release()
		}
		waited <- err
	}()
	time.Sleep(20 * time.Millisecond)
	held[0]()
	if err := <-waited; err != nil {
		t.Fatalf("alice's waiting body: %v", err)
	}
	for _, r := range held[1:] {
		r()
	}
	if got := h.ActionMemoryInUse(); got != 0 {
		t.Errorf("in use after every body was given back: %d", got)
	}
}
