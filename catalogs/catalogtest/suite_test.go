package catalogtest_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
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
	case "caps":
		return capsMem{m}
	}
	return batchMem{m}
}

// TestConformanceMem runs the suite on the double in each variant: a
// backend that is not Iceberg-shaped passes it as declared.
func TestConformanceMem(t *testing.T) {
	for _, variant := range []string{"batch", "txn", "multi", "caps"} {
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
	if variant == "iceberg" {
		catalogtest.Run(t, flawedIceberg(flaw), catalogtest.Config{StagesFiles: true, PlainPlans: true})
		return
	}
	cfg := memConfig(variant == "txn")
	switch flaw {
	case "declares-cas":
		cfg.CompareAndSwap = true
	case "declares-field-ids":
		cfg.FieldIDs = true
	case "declares-snapshots":
		cfg.Snapshots = true
	}
	catalogtest.Run(t, memHarness(variant, flaw), cfg)
}

// plannerFlaw is the real Iceberg backend on local files with its file
// planning broken in one way, to prove that the planner checks read the
// planned files back.
type plannerFlaw struct {
	*iceberg.Provider
	flaw string
}

// PlanFiles drops the last planned file ("plan-drops-file").
func (p plannerFlaw) PlanFiles(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.FilePlan, error) {
	plan, err := p.Provider.PlanFiles(ctx, t, req)
	if err == nil && p.flaw == "plan-drops-file" && len(plan.Files) > 1 {
		plan.Files, plan.FileBytes = plan.Files[:len(plan.Files)-1], plan.FileBytes[:len(plan.FileBytes)-1]
	}
	return plan, err
}

// Reclaim ignores the units of work's holds ("reclaim-ignores-held") or
// MinAge ("reclaim-ignores-age").
func (p plannerFlaw) Reclaim(ctx context.Context, opts catalogs.ReclaimOptions) (catalogs.ReclaimReport, error) {
	switch p.flaw {
	case "reclaim-ignores-held":
		opts.Held = nil
	case "reclaim-ignores-age":
		if opts.MinAge > 0 {
			opts.MinAge = time.Millisecond
		}
	}
	return p.Provider.Reclaim(ctx, opts)
}

// PlanStaged ignores overwrite ("staged-keeps-committed").
func (p plannerFlaw) PlanStaged(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest, staged []catalogs.WriteReceipt, overwrite bool) (*catalogs.FilePlan, error) {
	if p.flaw == "staged-keeps-committed" {
		overwrite = false
	}
	return p.Provider.PlanStaged(ctx, t, req, staged, overwrite)
}

func flawedIceberg(flaw string) catalogtest.Harness {
	return catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		dir := t.TempDir()
		props, err := iceberg.EmbeddedProperties(dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := iceberg.Open(context.Background(), iceberg.EmbeddedCatalogName, props)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		wh := filepath.Join(dir, "warehouse")
		return &catalogtest.Instance{
			Provider: plannerFlaw{Provider: p, flaw: flaw}, Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) {
				var out []string
				err := filepath.WalkDir(wh, func(path string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						out = append(out, path)
					}
					return nil
				})
				return out, err
			},
		}
	}}
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
		{"txn/abort-ignored", "StreamUnitOfWork/Abort", "commit of a transaction with an aborted stream: no error"},
		{"batch/declares-field-ids", "GetTableSpecConcurrent", "want two distinct non-zero field ids"},
		{"batch/declares-snapshots", "InvisibleUntilCommit", "want the commit's"},
		{"batch/receipts-any-table", "ReceiptChecker", "CheckReceipts of another table's receipts: no error"},
		{"batch/receipts-after-discard", "ReceiptChecker", "CheckReceipts of discarded receipts: no error"},
		{"batch/refs-none", "CheckUnreferenced", "CheckUnreferenced of committed receipts: no error"},
		{"batch/refs-current-only", "CheckUnreferenced", "CheckUnreferenced of receipts an overwrite replaced: no error"},
		{"batch/payload-drops-receipt", "PayloadCodec", "the decoded receipts count 20 rows, want 25"},
		{"batch/payload-trusts-table", "PayloadCodec", "a payload decoded and checked for another table: no error"},
		{"batch/payload-truncated-ok", "PayloadCodec", "a payload truncated to 0 of"},
		{"batch/match-ignores-files", "CommitMatcher", "MatchCommit(other receipts): same, want other files"},
		{"caps/options-ignored", "TableOptions", "CreateTable(unknown option): no error"},
		{"caps/replace-keeps-schema", "SchemaReplacer", "columns after the replace = [id name], want [id label score]"},
		{"caps/push-ignores-filter", "QueryPusher", "pushed query WHERE id >= 250 returned 300 rows, want 50"},
		{"caps/push-count-unchecked", "QueryPusher", "result has 1 column for a schema of 2: no error"},
		{"iceberg/reclaim-ignores-held", "Reclaimer", "which a snapshot references or a live unit of work holds"},
		{"iceberg/reclaim-ignores-age", "Reclaimer", "files after Reclaim of files younger than MinAge"},
		{"iceberg/plan-drops-file", "FilePlanner", "PlanFiles: the files hold"},
		{"iceberg/staged-keeps-committed", "StagedPlanner", "PlanStaged(overwrite): the files hold 150 rows, want 50"},
	} {
		t.Run(strings.ReplaceAll(c.flaw, "/", "_"), func(t *testing.T) {
			top, _, _ := strings.Cut(c.check, "/")
			cmd := exec.Command(os.Args[0], "-test.run=^TestFlawedBackend$/^"+top+"$", "-test.count=1", "-test.v")
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
