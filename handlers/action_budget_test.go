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
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: "coord", Realm: auth.DefaultRealm})
	do := func(typ string, body []byte) error {
		return srv.DoAction(&flight.Action{Type: typ, Body: body}, actionStream{ctx: ctx})
	}

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
	for range 2 {
		running.Add(1)
		go func() {
			defer running.Done()
			runErrs <- do(CommitMessagesActionType, big)
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
