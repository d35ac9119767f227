package handlers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
)

// sessionCtx is a call of principal name from the connection port.
func sessionCtx(name string, port int) context.Context {
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: name, Realm: auth.DefaultRealm})
	return peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}})
}

func setSchema(t *testing.T, h *Handler, ctx context.Context, schema string) error {
	t.Helper()
	opts, err := flight.NewSessionOptionValues(map[string]any{SessionOptionSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts})
	return err
}

// TestSessionOptionsBounded: a principal keeps options for at most
// MaxSessionsPerPrincipal sessions; one more is ResourceExhausted and
// nobody's live options are forgotten; the end of a session (its
// connection, or CloseSession) frees its share.
func TestSessionOptionsBounded(t *testing.T) {
	h := ticketHandler(t, "k")
	for i := range MaxSessionsPerPrincipal {
		if err := setSchema(t, h, sessionCtx("hog", 10000+i), fmt.Sprint("s", i)); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	bob := sessionCtx("bob", 9)
	if err := setSchema(t, h, bob, "bobs"); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	err := setSchema(t, h, sessionCtx("hog", 9999), "more")
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), fmt.Sprint(MaxSessionsPerPrincipal)) {
		t.Fatalf("one session too many: %v", err)
	}
	// Changing an existing session's options is not a new session.
	if err := setSchema(t, h, sessionCtx("hog", 10000), "changed"); err != nil {
		t.Fatalf("existing session: %v", err)
	}
	if o := h.sessionOptions(bob, auth.Principal{Name: "bob", Realm: auth.DefaultRealm}); o.schema != "bobs" {
		t.Fatalf("bob's options: %+v", o)
	}
	// The connection ends: its options go, and the hog has room again.
	h.SessionEnded(PeerSession(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10001}))
	if o := h.sessionOptions(sessionCtx("hog", 10001), auth.Principal{Name: "hog", Realm: auth.DefaultRealm}); o.schema != "" {
		t.Fatalf("options survived the end of their connection: %+v", o)
	}
	if err := setSchema(t, h, sessionCtx("hog", 9999), "more"); err != nil {
		t.Fatalf("after a session ended: %v", err)
	}
	// CloseSession forgets the caller's options only.
	if _, err := h.CloseSession(bob, &flight.CloseSessionRequest{}); err != nil {
		t.Fatal(err)
	}
	if o := h.sessionOptions(bob, auth.Principal{Name: "bob", Realm: auth.DefaultRealm}); o.schema != "" {
		t.Fatalf("options survived CloseSession: %+v", o)
	}
	if n := h.sql.sessions.owners["default/bob"]; n != 0 {
		t.Fatalf("bob still counted for %d sessions", n)
	}
	if n := h.sql.sessions.owners["default/hog"]; n != MaxSessionsPerPrincipal {
		t.Fatalf("hog counted for %d sessions, want %d", n, MaxSessionsPerPrincipal)
	}
}
