package handlers

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/txn"
)

func ticketHandler(t testing.TB, key string) *Handler {
	t.Helper()
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte(key)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestTickets(t *testing.T) {
	h := ticketHandler(t, "k1")
	now := time.Now()
	raw, err := h.signTicket(ticket{ID: "q", SQL: "SELECT 1", Owner: "default/anonymous", Expires: now.Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.openTicket(raw, "default/anonymous", now)
	if err != nil || got.SQL != "SELECT 1" || got.ID != "q" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// Another replica with the same key accepts it.
	if _, err := ticketHandler(t, "k1").openTicket(raw, "default/anonymous", now); err != nil {
		t.Fatalf("same key: %v", err)
	}
	tampered := bytes.Replace(raw, []byte("fgw1.e"), []byte("fgw1.f"), 1)
	cases := []struct {
		name  string
		h     *Handler
		raw   []byte
		owner string
		at    time.Time
		code  codes.Code
	}{
		{"other key", ticketHandler(t, "k2"), raw, "default/anonymous", now, codes.Unauthenticated},
		{"tampered", h, tampered, "default/anonymous", now, codes.Unauthenticated},
		{"expired", h, raw, "default/anonymous", now.Add(2 * time.Minute), codes.Unauthenticated},
		{"other owner", h, raw, "sales/alice", now, codes.PermissionDenied},
		{"not a ticket", h, []byte("SELECT 1"), "default/anonymous", now, codes.InvalidArgument},
		{"no signature", h, []byte("fgw1.abc"), "default/anonymous", now, codes.InvalidArgument},
	}
	for _, c := range cases {
		if _, err := c.h.openTicket(c.raw, c.owner, c.at); status.Code(err) != c.code {
			t.Errorf("%s: %v, want %v", c.name, err, c.code)
		}
	}
}

// FuzzOpenTicket: no input makes openTicket panic, and only a ticket this
// key signed opens.
func FuzzOpenTicket(f *testing.F) {
	h := ticketHandler(f, "fuzz-key")
	good, _ := h.signTicket(ticket{SQL: "SELECT 1", Owner: "o", Expires: time.Now().Add(time.Hour).Unix()})
	f.Add(good)
	f.Add([]byte("fgw1.."))
	f.Add([]byte("fgw1.e30.AAAA"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		tk, err := h.openTicket(raw, "o", time.Now())
		if err == nil && !bytes.Equal(raw, good) {
			resigned, _ := h.signTicket(tk)
			if !bytes.Equal(resigned, raw) {
				t.Fatalf("accepted a ticket it did not sign: %q", raw)
			}
		}
	})
}
