package server

import (
	"log/slog"
	"testing"
)

// TestCrashAfterCommitOffByDefault: the test-only crash hook is nil unless
// its variable is exactly 1.
func TestCrashAfterCommitOffByDefault(t *testing.T) {
	for _, v := range []string{"", "0", "true", "yes"} {
		t.Setenv(CrashAfterCommitEnv, v)
		if crashAfterCommit(slog.New(slog.DiscardHandler)) != nil {
			t.Errorf("%s=%q turned the crash hook on", CrashAfterCommitEnv, v)
		}
	}
	t.Setenv(CrashAfterCommitEnv, "1")
	if crashAfterCommit(slog.New(slog.DiscardHandler)) == nil {
		t.Errorf("%s=1 left the crash hook off", CrashAfterCommitEnv)
	}
}
