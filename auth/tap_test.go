package auth

import (
	"context"
	"encoding/base64"
	"net"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// TestTap: the transport tap refuses, from the headers alone, a call
// without credentials, with a bearer token that does not verify, with an
// unknown scheme or malformed Basic credentials, and Basic credentials
// of a locked-out address; it lets through a valid token, well-formed
// Basic credentials (the password is the interceptor's to check: the
// handshake among them), the health service, and everything when
// authentication is off.
func TestTap(t *testing.T) {
	hash, _ := HashPassword("pw")
	a, err := New(Config{Enabled: true, Users: []User{{Name: "alice", PasswordHash: hash}}})
	if err != nil {
		t.Fatal(err)
	}
	off, _ := New(Config{})
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	for range addrFailures {
		a.throttle.failed("mallory", "127.0.0.9")
	}
	locked := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 2}})
	free := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 2}})
	token := a.IssueToken(Principal{Name: "alice", Realm: DefaultRealm})
	const flight = "/arrow.flight.protocol.FlightService/"
	for _, tc := range []struct {
		name, method, auth string
		a                  *Authenticator
		ctx                context.Context
		want               codes.Code
	}{
		{"no credentials", flight + "GetFlightInfo", "", a, free, codes.Unauthenticated},
		{"forged token", flight + "GetFlightInfo", "Bearer fgw1.e30.forged", a, free, codes.Unauthenticated},
		{"unknown static token", flight + "DoPut", "Bearer nope", a, free, codes.Unauthenticated},
		{"unknown scheme", flight + "DoGet", "Digest x", a, free, codes.Unauthenticated},
		{"basic not base64", flight + "Handshake", "Basic !!!", a, free, codes.Unauthenticated},
		{"basic without colon", flight + "Handshake", basic("alice"), a, free, codes.Unauthenticated},
		{"basic from a locked address", flight + "Handshake", basic("mallory:x"), a, locked, codes.ResourceExhausted},
		{"valid token", flight + "GetFlightInfo", "Bearer " + token, a, free, codes.OK},
		{"handshake with basic", flight + "Handshake", basic("alice:wrong"), a, free, codes.OK},
		{"health", "/grpc.health.v1.Health/Check", "", a, free, codes.OK},
		{"auth off", flight + "GetFlightInfo", "", off, free, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := metadata.MD{}
			if tc.auth != "" {
				md.Set("authorization", tc.auth)
			}
			_, err := tc.a.Tap(tc.ctx, &tap.Info{FullMethodName: tc.method, Header: md})
			if status.Code(err) != tc.want {
				t.Fatalf("tap = %v, want %v", err, tc.want)
			}
		})
	}
}
