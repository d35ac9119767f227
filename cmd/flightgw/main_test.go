package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/auth"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersionAndHelp(t *testing.T) {
	if code, out, _ := runCLI(t, "", "version"); code != 0 || !strings.HasPrefix(out, "flightgw ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "--help"); code != 0 || !strings.Contains(out, "flightgw serve") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, errs := runCLI(t, "", "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Fatalf("unknown: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, ""); code != 2 || !strings.Contains(errs, "Usage") {
		t.Fatalf("no args: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, "", "serve", "-h"); code != 0 || !strings.Contains(errs, "-data-dir") || !strings.Contains(errs, "FLIGHTGW_LISTEN") {
		t.Fatalf("serve -h: %d %q", code, errs)
	}
}

func TestHashCommands(t *testing.T) {
	code, out, _ := runCLI(t, "hunter2\n", "hash-token")
	if code != 0 || strings.TrimSpace(out) != auth.HashToken("hunter2") {
		t.Fatalf("hash-token: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "hunter2\n", "hash-password")
	if code != 0 || !strings.HasPrefix(out, "$2a$") {
		t.Fatalf("hash-password: %d %q", code, out)
	}
	cfg := auth.Config{Users: []auth.User{{Name: "u", PasswordHash: strings.TrimSpace(out)}}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("printed hash is not accepted by the configuration: %v", err)
	}
	if code, _, _ := runCLI(t, "", "hash-password"); code != 2 {
		t.Fatalf("empty stdin: %d", code)
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
