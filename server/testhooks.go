package server

import (
	"log/slog"
	"os"
)

// CrashAfterCommitEnv, set to 1, makes the gateway kill itself (SIGKILL,
// nothing deferred runs) after a CommitMessages landed and before it
// replies. It is test-only, for integration tests that check a commit id
// resolves a lost reply (integration/commit_kill_test.go); it is read once
// at start, is not a configuration key, and must never be set in a real
// deployment.
const CrashAfterCommitEnv = "FLIGHTGW_TEST_CRASH_AFTER_COMMIT"

// crashAfterCommit is handlers.Options.AfterCommitMessages when
// CrashAfterCommitEnv is 1, else nil.
func crashAfterCommit(log *slog.Logger) func() {
	if os.Getenv(CrashAfterCommitEnv) != "1" {
		return nil
	}
	log.Warn("test-only crash hook on: the process kills itself after a CommitMessages lands", "env", CrashAfterCommitEnv)
	return func() {
		log.Warn("killing the process after a CommitMessages landed, before its reply", "env", CrashAfterCommitEnv)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // the reply never leaves
	}
}
