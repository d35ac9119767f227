package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/server"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// TestServeHelp: the gateway binary answers serve -h itself (the front
// passes it on) and runs the front's other commands.
func TestServeHelp(t *testing.T) {
	// Asked for, help is the output (flightgw serve --help | less).
	for _, h := range []string{"-h", "--help"} {
		if code, out, errs := runCLI(t, "", "serve", h); code != 0 || !strings.Contains(out, "-data-dir") || !strings.Contains(out, "FLIGHTGW_LISTEN") || errs != "" {
			t.Fatalf("serve %s: %d %q %q", h, code, out, errs)
		}
	}
	// After a bad flag it goes with the error, to stderr.
	if code, out, errs := runCLI(t, "", "serve", "--nope"); code != 2 || out != "" || !strings.Contains(errs, "-data-dir") || !strings.Contains(errs, "nope") {
		t.Fatalf("serve --nope: %d %q %q", code, out, errs)
	}
	if code, out, _ := runCLI(t, "", "version"); code != 0 || !strings.HasPrefix(out, "flightgw ") {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, []byte("catalogs:\n  - name: lake\n    type: iceberg\n    realms: x\n"), 0o600)
	code, _, errs := runCLI(t, "", "serve", "--config", p, "--data-dir", t.TempDir())
	if code != 2 || !strings.Contains(errs, "realms") {
		t.Fatalf("bad key: %d %q", code, errs)
	}
	code, _, errs = runCLI(t, "", "serve", "--listen", "0.0.0.0:0", "--data-dir", t.TempDir())
	if code != 1 || !strings.Contains(errs, "--insecure") {
		t.Fatalf("exposed without auth: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "", "serve", "extra"); code != 2 || !strings.Contains(errs, "extra") {
		t.Fatalf("extra arg: %d %q", code, errs)
	}
}

// TestBanner: once listening, make run shows where, what to paste, and
// where the data is; an address on every interface is reached on loopback.
func TestBanner(t *testing.T) {
	var b bytes.Buffer
	banner(&b, server.Listening{Addr: &net.TCPAddr{IP: net.IPv4zero, Port: 32010}}, "data")
	abs, _ := filepath.Abs("data")
	for _, want := range []string{"listening on grpc://127.0.0.1:32010", "data: " + abs,
		`python3 -c "import adbc_driver_flightsql.dbapi as f; cur = f.connect('grpc://127.0.0.1:32010'`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("banner %q does not say %q", b.String(), want)
		}
	}
	b.Reset()
	banner(&b, server.Listening{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}, TLS: true, Auth: true}, "/d")
	if !strings.Contains(b.String(), "grpc+tls://10.0.0.1:1") || !strings.Contains(b.String(), "password") {
		t.Errorf("banner with TLS and auth: %q", b.String())
	}
}
