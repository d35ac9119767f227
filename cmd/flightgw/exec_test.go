package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeExe(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}

// TestFindServer: next to the front first, then $FLIGHTGW_SERVER, then
// PATH; a FLIGHTGW_SERVER that names nothing runnable is an error, not a
// fall-back to PATH.
func TestFindServer(t *testing.T) {
	front, env, onPath := t.TempDir(), t.TempDir(), t.TempDir()
	self := filepath.Join(front, "flightgw")
	writeExe(t, self, 0o755)
	envServer := filepath.Join(env, "my-server")
	writeExe(t, envServer, 0o755)
	writeExe(t, filepath.Join(onPath, serverName), 0o755)
	t.Setenv("PATH", onPath)

	if got, err := findServer(self, ""); err != nil || got != filepath.Join(onPath, serverName) {
		t.Fatalf("PATH: %q %v", got, err)
	}
	if got, err := findServer(self, envServer); err != nil || got != envServer {
		t.Fatalf("$FLIGHTGW_SERVER before PATH: %q %v", got, err)
	}
	writeExe(t, filepath.Join(front, serverName), 0o644)
	if got, err := findServer(self, envServer); err != nil || got != envServer {
		t.Fatalf("a non-executable file next to the front is skipped: %q %v", got, err)
	}
	os.Chmod(filepath.Join(front, serverName), 0o755)
	if got, err := findServer(self, envServer); err != nil || got != filepath.Join(front, serverName) {
		t.Fatalf("next to the front first: %q %v", got, err)
	}
	os.Remove(filepath.Join(front, serverName))
	_, err := findServer(self, filepath.Join(env, "missing"))
	if err == nil || !strings.Contains(err.Error(), "$FLIGHTGW_SERVER="+filepath.Join(env, "missing")+": no such file") {
		t.Fatalf("a missing $FLIGHTGW_SERVER must be reported, got %v", err)
	}
}

// TestMissingServer: without a gateway binary anywhere, the error names
// each place looked at and how to build it.
func TestMissingServer(t *testing.T) {
	front, empty := t.TempDir(), t.TempDir()
	t.Setenv("PATH", empty)
	self := filepath.Join(front, "flightgw")
	_, err := findServer(self, "")
	if err == nil {
		t.Fatal("found a server in empty directories")
	}
	for _, want := range []string{
		filepath.Join(front, serverName) + " (next to " + self + "): no such file",
		"$FLIGHTGW_SERVER: not set",
		"PATH=" + empty + ": no flightgw-server",
		"make build", "./cmd/flightgw-server",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}
