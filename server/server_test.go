package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	_ "github.com/flightgw/flightgw/catalogs/iceberg"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRecoverTurnsPanicIntoInternal(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	_, err := recoverUnary(log)(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/svc/Boom"},
		func(context.Context, any) (any, error) { panic("kaboom") })
	if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("err = %v (the panic value must not reach the client)", err)
	}
	if !strings.Contains(logs.String(), "panic in handler") || !strings.Contains(logs.String(), "kaboom") {
		t.Fatalf("log = %s", logs.String())
	}
	err = recoverStream(log)(nil, nil, &grpc.StreamServerInfo{FullMethod: "/svc/BoomStream"},
		func(any, grpc.ServerStream) error { panic("stream kaboom") })
	if status.Code(err) != codes.Internal {
		t.Fatalf("stream err = %v", err)
	}
}

func TestServeHealthAndShutdown(t *testing.T) {
	t.Setenv("FLIGHTGW_DATA_DIR", t.TempDir())
	t.Setenv("FLIGHTGW_LISTEN", "127.0.0.1:0")
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", resp, err)
	}
	// The same over plain HTTP (health.listen), for probes without TLS.
	stopHTTP, httpAddr, err := s.serveHealthHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stopHTTP()
	get := func(path string) (int, string) {
		r, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get("/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || body != "serving" {
		t.Errorf("/readyz = %d %q", code, body)
	}
	if code, _ := get("/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ = %d, want 404: only health is served there", code)
	}
	// An open transaction is rolled back at shutdown.
	if _, err := s.txns.Begin("default/anonymous", ""); err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	// Once shutdown began, not ready; still alive.
	if code, body := get("/readyz"); code != 503 || body != "not serving" {
		t.Errorf("/readyz after shutdown = %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz after shutdown = %d", code)
	}
	if s.txns.OpenCount() != 0 {
		t.Fatal("transactions left open after shutdown")
	}
	if !strings.Contains(logs.String(), "flightgw stopped") {
		t.Fatalf("log = %s", logs.String())
	}
}

func TestListenRefusesExposureWithoutAuth(t *testing.T) {
	t.Setenv("FLIGHTGW_DATA_DIR", t.TempDir())
	t.Setenv("FLIGHTGW_LISTEN", "0.0.0.0:0")
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if _, err := s.Listen(); err == nil || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("listen on 0.0.0.0 without auth: %v", err)
	}
}

// TestHealthListenerExposure: health.listen follows the gRPC listener's
// rule (a non-loopback address needs auth or --insecure) and, its
// /metrics being for operators, needs health.public as well. Before, a
// non-loopback address was served whatever the configuration.
func TestHealthListenerExposure(t *testing.T) {
	hash, _ := auth.HashPassword("pw")
	authOn, err := auth.New(auth.Config{Enabled: true, Users: []auth.User{{Name: "alice", PasswordHash: hash}}})
	if err != nil {
		t.Fatal(err)
	}
	authOff, _ := auth.New(auth.Config{})
	for _, tc := range []struct {
		name             string
		addr             string
		auth             *auth.Authenticator
		insecure, public bool
		refused          string // "" when served
	}{
		{"loopback", "127.0.0.1:0", authOff, false, false, ""},
		{"any address, auth off", "0.0.0.0:0", authOff, false, true, "--insecure"},
		{"any address, insecure, not public", "0.0.0.0:0", authOff, true, false, "health.public"},
		{"any address, auth on, not public", ":0", authOn, false, false, "health.public"},
		{"any address, auth on, public", "0.0.0.0:0", authOn, false, true, ""},
		{"any address, insecure, public", "0.0.0.0:0", authOff, true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{cfg: &Config{Insecure: tc.insecure, Health: HealthConfig{Listen: tc.addr, Public: tc.public}},
				auth: tc.auth, log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics(nil), health: health.NewServer()}
			stop, _, err := s.serveHealthHTTP(tc.addr)
			if err == nil {
				stop()
			}
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("err = %v, want a refusal naming %s", err, tc.refused)
			}
		})
	}
}
