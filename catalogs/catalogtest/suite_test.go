package catalogtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// memConfig is what the double declares: nothing Iceberg-shaped (no
// files, no compare-and-swap, no field ids, no snapshots, any layout, no
// file plans); its transaction variant is transaction-scoped.
func memConfig(txn bool) catalogtest.Config {
	return catalogtest.Config{TransactionScoped: txn}
}

// memHarness builds a fresh double of a variant for each subtest, with
// the given flaw (none: "").
func memHarness(variant, flaw string) catalogtest.Harness {
	return catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		m := newMem("mem")
		m.flaw = flaw
		return &catalogtest.Instance{
			Provider: wrap(m, variant), Catalog: "mem", Namespace: []string{"default"},
			Now: m.now, Advance: m.advance,
		}
	}}
}

// wrap returns the variant of the double: which optional write interface
// it offers.
func wrap(m *mem, variant string) catalogs.Provider {
	switch variant {
	case "txn":
		return txnMem{m}
	case "multi":
		return multiMem{m}
	}
	return batchMem{m}
}

// TestConformanceMem runs the suite on the double in each variant: a
// backend that is not Iceberg-shaped passes it as declared.
func TestConformanceMem(t *testing.T) {
	for _, variant := range []string{"batch", "txn", "multi"} {
		t.Run(variant, func(t *testing.T) {
			catalogtest.Run(t, memHarness(variant, ""), memConfig(variant == "txn"))
		})
	}
}

// flawEnv names the flaw TestFlawedBackend runs the suite with, in the
// child process TestSuiteCatchesFlaws starts.
const flawEnv = "CATALOGTEST_FLAW"

// TestFlawedBackend runs the suite on a double broken as flawEnv says; it
// is meant to fail, and runs only in TestSuiteCatchesFlaws' child.
func TestFlawedBackend(t *testing.T) {
	spec := os.Getenv(flawEnv)
	if spec == "" {
		t.Skip("run by TestSuiteCatchesFlaws")
	}
	variant, flaw, _ := strings.Cut(spec, "/")
	cfg := memConfig(variant == "txn")
	if flaw == "declares-cas" {
		cfg.CompareAndSwap = true
	}
	catalogtest.Run(t, memHarness(variant, flaw), cfg)
}

// TestSuiteCatchesFlaws proves the checks can fail: each flawed double
// (or a double declaring what it does not do) fails the suite in the
// check that covers the flaw, saying what is wrong.
func TestSuiteCatchesFlaws(t *testing.T) {
	if os.Getenv(flawEnv) != "" {
		t.Skip("in the child")
	}
	for _, c := range []struct {
		flaw  string
		check string // the one subtest that must fail
		says  string
	}{
		{"batch/token-in-key-metadata", "SecurityContext", "shows the token"},
		{"batch/stale-credential", "SecurityContext", "an expired credential must never be returned"},
		{"batch/retries-without-cas", "ConcurrentCommitters", "not compare-and-swap reported"},
		{"batch/declares-cas", "ConcurrentCommitters", "reported no retried conflict"},
		{"batch/visible-before-commit", "InvisibleUntilCommit", "rows before commit"},
		{"txn/abort-ignored", "TxnStreamWriter/Abort", "commit of a transaction with an aborted stream: no error"},
	} {
		t.Run(strings.ReplaceAll(c.flaw, "/", "_"), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFlawedBackend$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), flawEnv+"="+c.flaw)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a backend with flaw %s:\n%s", c.flaw, out)
			}
			log := string(out)
			if !strings.Contains(log, "--- FAIL: TestFlawedBackend/"+c.check+" ") {
				t.Errorf("flaw %s did not fail check %s:\n%s", c.flaw, c.check, log)
			}
			if !strings.Contains(log, c.says) {
				t.Errorf("flaw %s: no failure says %q:\n%s", c.flaw, c.says, log)
			}
		})
	}
}
