package auth

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func newAuth(t *testing.T) *Authenticator {
	t.Helper()
	h, err := HashPassword("pw-alice")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{
		Enabled: true,
		Users:   []User{{Name: "alice", Realm: "sales", PasswordHash: h}},
		Tokens:  []Token{{Name: "etl", Realm: "ops", SHA256: HashToken("static-token")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func call(t *testing.T, a *Authenticator, header string) (Principal, metadata.MD, error) {
	t.Helper()
	ctx := context.Background()
	if header != "" {
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", header))
	}
	var got Principal
	var hdr metadata.MD
	ctx = grpc.NewContextWithServerTransportStream(ctx, &fakeTransport{hdr: &hdr})
	_, err := a.UnaryInterceptor()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/arrow.flight.protocol.FlightService/DoAction"},
		func(ctx context.Context, _ any) (any, error) {
			got, _ = FromContext(ctx)
			return nil, nil
		})
	return got, hdr, err
}

type fakeTransport struct{ hdr *metadata.MD }

func (f *fakeTransport) Method() string { return "m" }
func (f *fakeTransport) SetHeader(md metadata.MD) error {
	*f.hdr = metadata.Join(*f.hdr, md)
	return nil
}
func (f *fakeTransport) SendHeader(md metadata.MD) error { return f.SetHeader(md) }
func (f *fakeTransport) SetTrailer(metadata.MD) error    { return nil }

func basic(u, p string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p))
}

func TestBasicThenBearer(t *testing.T) {
	a := newAuth(t)
	p, hdr, err := call(t, a, basic("alice", "pw-alice"))
	if err != nil || p.Name != "alice" || p.Realm != "sales" {
		t.Fatalf("basic: %+v %v", p, err)
	}
	bearer := hdr.Get("authorization")
	if len(bearer) != 1 || !strings.HasPrefix(bearer[0], "Bearer ") {
		t.Fatalf("no bearer token in response header: %v", hdr)
	}
	p2, _, err := call(t, a, bearer[0])
	if err != nil || p2 != p {
		t.Fatalf("bearer: %+v %v", p2, err)
	}
}

func TestRejections(t *testing.T) {
	a := newAuth(t)
	for name, h := range map[string]string{
		"none":         "",
		"bad password": basic("alice", "wrong"),
		"no user":      basic("bob", "pw-alice"),
		"bad base64":   "Basic !!!",
		"bad token":    "Bearer nope",
		"forged":       "Bearer fgw1.eyJzdWIiOiJhbGljZSIsInJlYWxtIjoic2FsZXMiLCJleHAiOjk5OTk5OTk5OTl9.AAAA",
		"scheme":       "Digest x",
	} {
		_, _, err := call(t, a, h)
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: code = %v (%v)", name, status.Code(err), err)
		}
	}
}

func TestStaticTokenAndExpiry(t *testing.T) {
	a := newAuth(t)
	p, _, err := call(t, a, "Bearer static-token")
	if err != nil || p.Name != "etl" || p.Realm != "ops" {
		t.Fatalf("static: %+v %v", p, err)
	}
	tok := a.IssueToken(Principal{Name: "alice", Realm: "sales"})
	a.now = func() time.Time { return time.Now().Add(2 * DefaultTokenTTL) }
	if _, _, err := call(t, a, "Bearer "+tok); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("expired token accepted: %v", err)
	}
}

func TestDisabledIsAnonymous(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := call(t, a, "")
	if err != nil || p != Anonymous {
		t.Fatalf("got %+v %v", p, err)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, c := range map[string]Config{
		"bad hash":     {Users: []User{{Name: "a", PasswordHash: "plain"}}},
		"dup":          {Tokens: []Token{{Name: "a", SHA256: HashToken("x")}, {Name: "a", SHA256: HashToken("y")}}},
		"bad sha":      {Tokens: []Token{{Name: "a", SHA256: "zz"}}},
		"enabled none": {Enabled: true},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	err := (&Config{Users: []User{{Name: "a", PasswordHash: "plain"}}}).Validate()
	if !strings.Contains(err.Error(), "auth.users[0].password_hash") {
		t.Fatalf("message does not name the key: %v", err)
	}
}
