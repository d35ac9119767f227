package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/client"
)

// pypaimonEnv names a Python with pypaimon (make paimon-replica-check
// sets it to the .venv-paimon one): TestReplicasCommitOnce then has
// pypaimon read every Paimon table it committed.
const pypaimonEnv = "FLIGHTGW_PYPAIMON"

// TestReplicasCommitOnce: two gateway processes share a warehouse and the
// signing key; one prepares a payload, and both are sent it in
// CommitMessages at the same instant under two commit ids, a few times
// over, for Paimon and for Iceberg. Each time exactly one lands and the
// other is FailedPrecondition; every row is in the table once, as SQL
// reads it, and for Paimon as pypaimon reads it (with FLIGHTGW_PYPAIMON)
// and Paimon Java's verify-tables (under make paimon-dist-check).
func TestReplicasCommitOnce(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts gateway processes")
	}
	const trials, rows = 4, 50
	formats := []struct {
		name, catalog string
		conf          func(dir string) string
	}{
		{"paimon", "pm", func(dir string) string {
			return fmt.Sprintf(`tickets: {signing_key: %s}
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "%s", create-namespaces: default}
default_catalog: pm
`, paimonSigningKey, filepath.Join(dir, "wh"))
		}},
		{"iceberg", "lake", func(dir string) string { return sharedLake(dir, "replica-key") }},
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			shared := t.TempDir()
			if f.name == "paimon" && *paimonDist != "" {
				shared = *paimonDist
			}
			ctx := context.Background()
			procs := []*gatewayProc{startChild(t, t.TempDir(), f.conf(shared)), startChild(t, t.TempDir(), f.conf(shared))}
			cs := []*flightsql.Client{procs[0].flightClient(t), procs[1].flightClient(t)}
			var tables []string
			for trial := range trials {
				name := fmt.Sprintf("once_%d", trial)
				tables = append(tables, name)
				opts := modeCreate(name)
				opts.Catalog = ptr(f.catalog)
				payload := prepareIn(t, cs[0], opts, trial*1000, rows)
				ref := lakeTable(name)
				ref.Catalog = f.catalog
				tp := []client.TablePayloads{{TableRef: ref, Payloads: [][]byte{payload}}}
				errs := make([]error, 2)
				var start, done sync.WaitGroup
				start.Add(1)
				for i := range cs {
					done.Add(1)
					go func() {
						defer done.Done()
						start.Wait()
						_, errs[i] = client.CommitMessages(ctx, cs[i], fmt.Sprintf("job-%d-%d", trial, i), tp)
					}()
				}
				start.Done()
				done.Wait()
				landed := 0
				for i, err := range errs {
					switch {
					case err == nil:
						landed++
					case status.Code(err) != codes.FailedPrecondition:
						t.Errorf("trial %d: replica %d: %v; want OK or FailedPrecondition", trial, i, err)
					}
				}
				if landed != 1 {
					t.Errorf("trial %d: %d of the two commits landed (%v), want exactly one", trial, landed, errs)
				}
				full := f.catalog + ".default." + name
				want := fmt.Sprintf("%d|%d", rows, rows)
				if got := queryOne(t, procs[1].gateway, "SELECT count(*), count(DISTINCT id) FROM "+full); got != want {
					t.Errorf("trial %d: %s count, distinct = %s, want %s", trial, full, got, want)
				}
				if f.name == "paimon" {
					writeRendered(t, filepath.Join(shared, "wh", "expected"), name, peopleRendered(trial*1000, rows))
				}
			}
			if py := os.Getenv(pypaimonEnv); f.name == "paimon" && py != "" {
				cmd := exec.Command(py, "-m", "pytest", "-q", "pypaimon")
				cmd.Env = append(os.Environ(), "PAIMON_SAMPLES="+filepath.Join(shared, "wh"))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("pypaimon read of %v: %v\n%s", tables, err, out)
				}
				if !strings.Contains(string(out), fmt.Sprintf("%d passed", trials)) {
					t.Fatalf("pypaimon did not read the %d tables:\n%s", trials, out)
				}
			}
		})
	}
}

// writeRendered writes a table's expected rows, sorted, as pypaimon's test
// and Paimon Java's verify-tables read them (dir/<table>.txt).
func writeRendered(t *testing.T, dir, table string, rows []string) {
	t.Helper()
	sorted := append([]string(nil), rows...)
	slices.Sort(sorted)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("ROWS %d\n%s\n", len(sorted), strings.Join(sorted, "\n"))
	if err := os.WriteFile(filepath.Join(dir, table+".txt"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
