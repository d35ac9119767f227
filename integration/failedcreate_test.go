package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// createBackends are the gateways a failed create is tried on: the
// embedded Iceberg lake and a Paimon warehouse, whose creates are both
// staged (the table exists once the create's commit lands: a row in the
// SQL catalog, schema/schema-0). The batch limit is the smallest there
// is, so that a batch of a few MiB is refused mid-stream. files lists the
// data files staged for default.<table> under the data directory, whether
// or not the table exists.
var createBackends = []struct {
	name, yaml, catalog string
	staged              bool
	files               func(t *testing.T, dataDir, table string) []string
}{
	{"iceberg", "limits: {max_batch_bytes: 1048576}\n", "", true, stagedFiles},
	{"paimon", `
limits: {max_batch_bytes: 1048576}
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`, "pm", true, paimonStagedFiles},
}

// stagedFiles lists the data files staged for the embedded lake's table
// default.<table> under dataDir, whether or not the table exists.
func stagedFiles(t *testing.T, dataDir, table string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "warehouse", "default.db", table, "data", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// paimonStagedFiles lists the data files staged for the table
// default.<table> of the Paimon warehouse under dataDir (an unpartitioned
// table's bucket directories), whether or not the table exists.
func paimonStagedFiles(t *testing.T, dataDir, table string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "paimon", "default.db", table, "bucket-*", "data-*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func createOpts(table, catalog string) *flightsql.ExecuteIngestOpts {
	o := modeCreate(table)
	if catalog != "" {
		o.Catalog = ptr(catalog)
	}
	return o
}

// bigPeople is a people batch of about 4 MiB, over a 1 MiB batch limit.
func bigPeople(t *testing.T) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, peopleSchema)
	defer b.Release()
	long := string(make([]byte, 4096))
	for i := range 1024 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(long)
		b.Field(2).(*array.Float64Builder).Append(1)
	}
	return b.NewRecordBatch()
}

// tableRows counts a table's rows through the gateway.
func tableRows(t *testing.T, g *gateway, table string) string {
	t.Helper()
	return queryOne(t, g, fmt.Sprintf(`SELECT count(*) FROM "default".%s`, table))
}

// TestFailedCreateLeavesNoTable: a create whose stream fails before its
// commit (the client cancels; the gateway refuses a batch over its limit)
// leaves no table, so the retry with mode create succeeds.
func TestFailedCreateLeavesNoTable(t *testing.T) {
	requireEngine(t)
	for _, be := range createBackends {
		t.Run(be.name, func(t *testing.T) {
			g := startGateway(t, be.yaml)
			ctx := context.Background()
			fails := map[string]func(c *flightsql.Client, table string) error{
				"client cancel": func(c *flightsql.Client, table string) error {
					cctx, cancel := context.WithCancel(ctx)
					st := &stallingReader{RecordReader: reader(t, people(t, 0, 3), people(t, 3, 3)), sent: make(chan struct{}), release: make(chan struct{})}
					done := make(chan error, 1)
					go func() {
						_, err := c.ExecuteIngest(cctx, st, createOpts(table, be.catalog))
						done <- err
					}()
					<-st.sent
					visible := func() bool {
						_, err := queryRows(t, g.adbcConn(t, nil), fmt.Sprintf(`SELECT count(*) FROM "default".%s`, table), nil)
						return err == nil
					}
					switch {
					case be.staged:
						// The cancel comes once the create has staged a data
						// file, the table still invisible.
						if !eventually(t, 10*time.Second, func() bool { return len(be.files(t, g.dataDir, table)) > 0 }) {
							t.Error("the create never staged a data file")
						}
						if visible() {
							t.Error("the table is visible before its create commits")
						}
					case !eventually(t, 10*time.Second, visible):
						// The cancel comes once the create has made the table.
						t.Error("the create never made the table")
					}
					cancelStalled(cancel, st)
					return <-done
				},
				"batch refused": func(c *flightsql.Client, table string) error {
					_, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3), bigPeople(t)), createOpts(table, be.catalog))
					if s, _ := status.FromError(err); s.Code() != codes.ResourceExhausted {
						t.Errorf("big batch: %v, want ResourceExhausted", err)
					}
					return err
				},
			}
			for name, fail := range fails {
				table := "failed_" + string(name[0])
				if err := fail(g.flightClient(t), table); err == nil {
					t.Fatalf("%s: the ingest succeeded", name)
				}
				// The server side of a cancelled stream may still be
				// finishing: the retry is given a moment.
				var n int64
				var err error
				eventually(t, 5*time.Second, func() bool {
					n, err = g.flightClient(t).ExecuteIngest(ctx, reader(t, people(t, 10, 4)), createOpts(table, be.catalog))
					return err == nil
				})
				if err != nil || n != 4 {
					t.Fatalf("%s: retry with mode create: n=%d err=%v", name, n, err)
				}
				if got := tableRows(t, g, table); got != "4" {
					t.Errorf("%s: rows = %s, want the retry's 4", name, got)
				}
			}
		})
	}
}

// TestCreateInRolledBackTransactionLeavesNoTable: a table created by an
// ingest of a transaction goes again with its ROLLBACK.
func TestCreateInRolledBackTransactionLeavesNoTable(t *testing.T) {
	requireEngine(t)
	for _, be := range createBackends {
		t.Run(be.name, func(t *testing.T) {
			g := startGateway(t, be.yaml)
			ctx := context.Background()
			c := g.flightClient(t)
			tx, err := c.BeginTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			o := createOpts("rolled", be.catalog)
			o.TransactionId = tx.ID()
			if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), o); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			n, err := g.flightClient(t).ExecuteIngest(ctx, reader(t, people(t, 10, 2)), createOpts("rolled", be.catalog))
			if err != nil || n != 2 {
				t.Fatalf("create after ROLLBACK: n=%d err=%v", n, err)
			}
			if got := tableRows(t, g, "rolled"); got != "2" {
				t.Errorf("rows = %s, want 2", got)
			}
		})
	}
}

// TestConcurrentCreates: of creates of one name at once, exactly one
// lands; the others get AlreadyExists, and the table holds the winner's
// rows only.
func TestConcurrentCreates(t *testing.T) {
	requireEngine(t)
	for _, be := range createBackends {
		t.Run(be.name, func(t *testing.T) {
			g := startGateway(t, be.yaml)
			const writers = 4
			errs := make([]error, writers)
			var wg sync.WaitGroup
			for i := range writers {
				c := g.flightClient(t)
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = c.ExecuteIngest(context.Background(), reader(t, people(t, 100*i, 5)), createOpts("raced", be.catalog))
				}()
			}
			wg.Wait()
			won := 0
			for i, err := range errs {
				if err == nil {
					won++
					continue
				}
				if s, _ := status.FromError(err); s.Code() != codes.AlreadyExists {
					t.Errorf("writer %d: %v, want AlreadyExists", i, err)
				}
			}
			if won != 1 {
				t.Fatalf("%d creates landed, want 1: %v", won, errors.Join(errs...))
			}
			if got := tableRows(t, g, "raced"); got != "5" {
				t.Errorf("rows = %s, want the winner's 5", got)
			}
		})
	}
}

// TestCreateCutByShutdownLeavesNoTable: a gateway stopped (as by SIGTERM)
// while a create streams, past its shutdown grace, leaves no table in the
// catalog it shares with other engines: the create has staged a data file
// and the table is not in the catalog, before the stop and after it.
func TestCreateCutByShutdownLeavesNoTable(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "timeouts: {shutdown_grace: 1s}\n")
	st := &stallingReader{RecordReader: reader(t, people(t, 0, 3), people(t, 3, 3)), sent: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := g.flightClient(t).ExecuteIngest(context.Background(), st, createOpts("cut", ""))
		done <- err
	}()
	<-st.sent
	if !eventually(t, 10*time.Second, func() bool { return len(stagedFiles(t, g.dataDir, "cut")) > 0 }) {
		t.Fatal("the create never staged a data file")
	}
	if _, err := g.catalog(t).LoadTable(context.Background(), table.Identifier{"default", "cut"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("table while the create streams: %v, want none", err)
	}
	g.shutdown()
	close(st.release)
	if err := <-done; err == nil {
		t.Fatal("the ingest cut by shutdown succeeded")
	}
	_, err := g.catalog(t).LoadTable(context.Background(), table.Identifier{"default", "cut"})
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("table after shutdown: %v, want none", err)
	}
}
