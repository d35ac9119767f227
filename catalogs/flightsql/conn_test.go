package flightsql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/testpki"
)

// tokens is an upstream's Basic handshake: user gw, password pw, a new
// bearer token per handshake, all of them expired at once by expire.
type tokens struct {
	mu         sync.Mutex
	valid      map[string]bool
	handshakes int
}

func (v *tokens) Validate(user, password string) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if user != "gw" || password != "pw" {
		return "", status.Error(codes.Unauthenticated, "wrong user or password")
	}
	v.handshakes++
	tok := fmt.Sprintf("t%d", v.handshakes)
	v.valid[tok] = true
	return tok, nil
}

func (v *tokens) IsValid(tok string) (any, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.valid[tok] {
		return nil, status.Error(codes.Unauthenticated, "token expired")
	}
	return "gw", nil
}

func (v *tokens) expire() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.valid)
}

func (v *tokens) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.handshakes
}

// TestReHandshake: the Basic handshake's bearer token is sent on every
// call; once the upstream refuses it (expired) the catalog handshakes
// again and repeats the call, whether the refusal comes on the
// FlightInfo or on the DoGet after it. A wrong password is
// PermissionDenied naming the upstream, without the password.
func TestReHandshake(t *testing.T) {
	f := newFake()
	f.rows["a"] = []int64{7}
	f.endpoints = func() []*flight.FlightEndpoint { return []*flight.FlightEndpoint{ticket(t, "a")} }
	v := &tokens{valid: map[string]bool{}}
	addr := serveFake(t, f, []flight.ServerMiddleware{flight.CreateServerBasicAuthMiddleware(v)})
	p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + addr, propUser: "gw", propPassword: "pw",
		catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, step := range []struct {
		name       string
		before     func()
		afterInfo  func()
		handshakes int
	}{
		{"first call", func() {}, nil, 1},
		{"token valid", func() {}, nil, 1},
		{"expired before the FlightInfo", v.expire, nil, 2},
		{"expired between the FlightInfo and the DoGet", func() {}, v.expire, 3},
	} {
		step.before()
		f.afterInfo = step.afterInfo
		got, err := readAll(context.Background(), p)
		if err != nil || !slices.Equal(got, []int64{7}) {
			t.Fatalf("%s: rows %v, %v", step.name, got, err)
		}
		if n := v.count(); n != step.handshakes {
			t.Fatalf("%s: %d handshakes, want %d", step.name, n, step.handshakes)
		}
	}
	f.afterInfo = nil

	bad, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + addr, propUser: "gw", propPassword: "pw-wrong",
		catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = readAll(context.Background(), bad)
	if catalogs.Kind(err) != catalogs.ErrPermissionDenied || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "pw-wrong") {
		t.Fatalf("a wrong password: %v, want PermissionDenied naming %s and not the password", err, addr)
	}
}

// TestTLS: a grpc+tls upstream is reached with the configured CA (and
// server name), and with mutual TLS when it asks for a client
// certificate; another CA, another server name or a missing client
// certificate fail naming the upstream.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca, err := testpki.New("upstream ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testpki.New("other ca")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.Issue(2)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey, err := ca.Issue(3)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	f := newFake()
	f.rows["a"] = []int64{7}
	f.endpoints = func() []*flight.FlightEndpoint { return []*flight.FlightEndpoint{ticket(t, "a")} }
	plain := serveFake(t, f, nil, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{kp}})))
	mutual := serveFake(t, f, nil, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{kp},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})))
	caFile, otherFile := write("ca.pem", ca.PEM), write("other.pem", other.PEM)
	certFile, keyFile := write("client.pem", cliCert), write("client.key", cliKey)
	for _, tc := range []struct {
		name  string
		addr  string
		props map[string]string
		ok    bool
	}{
		{"the upstream's CA", plain, map[string]string{propTLSCA: caFile}, true},
		{"the upstream's CA and server name", plain, map[string]string{propTLSCA: caFile, propTLSName: "localhost"}, true},
		{"another CA", plain, map[string]string{propTLSCA: otherFile}, false},
		{"another server name", plain, map[string]string{propTLSCA: caFile, propTLSName: "other.internal"}, false},
		{"mutual TLS without a client certificate", mutual, map[string]string{propTLSCA: caFile}, false},
		{"mutual TLS", mutual, map[string]string{propTLSCA: caFile, propTLSCert: certFile, propTLSKey: keyFile}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{propURI: "grpc+tls://" + tc.addr, catalogs.PropRemoteTimeout: "5000", catalogs.PropRemoteAttempts: "1"}
			for k, v := range tc.props {
				props[k] = v
			}
			p, err := Open(context.Background(), "up", props)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got, err := readAll(context.Background(), p)
			switch {
			case tc.ok && (err != nil || !slices.Equal(got, []int64{7})):
				t.Fatalf("rows %v, %v", got, err)
			case !tc.ok && (catalogs.Kind(err) != catalogs.ErrUnavailable || !strings.Contains(err.Error(), tc.addr)):
				t.Fatalf("%v, want Unavailable naming the upstream %s", err, tc.addr)
			}
		})
	}
}
