package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/auth"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, strings.NewReader(stdin), &out, &errb, func(a []string) int {
		t.Fatalf("the gateway ran for %q", a)
		return 0
	})
	return code, out.String(), errb.String()
}

func TestVersionAndHelp(t *testing.T) {
	if code, out, _ := runCLI(t, "", "version"); code != 0 || !strings.HasPrefix(out, "flightgw dev (arrow-go 18.") {
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
	if code, _, errs := runCLI(t, "", "messages"); code != 2 || !strings.Contains(errs, "usage: flightgw messages inspect") {
		t.Fatalf("messages: %d %q", code, errs)
	}
}

// TestServeRunsGateway: serve, and only serve, goes to the gateway, with
// every argument.
func TestServeRunsGateway(t *testing.T) {
	var got []string
	code := Run([]string{"serve", "--listen", "127.0.0.1:0", "-h"}, nil, nil, nil, func(a []string) int {
		got = a
		return 7
	})
	if code != 7 || strings.Join(got, " ") != "serve --listen 127.0.0.1:0 -h" {
		t.Fatalf("gateway ran with %q and returned %d", got, code)
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
