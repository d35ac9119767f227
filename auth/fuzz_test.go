package auth

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// FuzzAuthorizationHeader feeds arbitrary authorization headers: every
// one is either a known principal or Unauthenticated, never a panic.
func FuzzAuthorizationHeader(f *testing.F) {
	a, err := New(Config{Enabled: true, Tokens: []Token{{Name: "etl", Realm: "ops", SHA256: HashToken("static-token")}}})
	if err != nil {
		f.Fatal(err)
	}
	good := a.IssueToken(Principal{Name: "etl", Realm: "ops"})
	for _, s := range []string{"", "Bearer " + good, "Bearer static-token", "Basic dTpw", "Basic !!", "bearer fgw1..", "Bearer fgw1.e30.", "Basic Og=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", h))
		p, _, err := a.authenticate(ctx)
		if err != nil {
			if status.Code(err) != codes.Unauthenticated {
				t.Fatalf("header %q: code %v", h, status.Code(err))
			}
			return
		}
		if p.Realm != "ops" {
			t.Fatalf("header %q authenticated %+v", h, p)
		}
	})
}
