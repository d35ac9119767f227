package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// deltaCreateYAML is a Delta catalog (staged creates: a table exists once
// its log version 0 does) with the smallest batch limit.
const deltaCreateYAML = `
limits: {max_batch_bytes: 1048576}
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`

func deltaCreate(table string) *flightsql.ExecuteIngestOpts { return createOpts(table, "dl") }

// deltaLogExists reports whether the Delta table default.<table> of the
// warehouse under dataDir exists: whether its _delta_log does.
func deltaLogExists(t *testing.T, dataDir, table string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dataDir, "delta", "default", table, "_delta_log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// invisible checks that another connection does not see dl.default.table.
func invisible(t *testing.T, g *gateway, table, when string) {
	t.Helper()
	if _, err := queryRows(t, g.adbcConn(t, nil), fmt.Sprintf(`SELECT count(*) FROM dl."default".%s`, table), nil); err == nil {
		t.Errorf("%s: another connection sees table %s", when, table)
	}
	if deltaLogExists(t, g.dataDir, table) {
		t.Errorf("%s: table %s has a _delta_log", when, table)
	}
}

// TestStagedCreateFailedLeavesNoTable: on a backend that stages creates
// the table does not exist while the create streams, and a create that
// fails (the client cancels, a batch is refused) leaves none: the retry
// with mode create succeeds.
func TestStagedCreateFailedLeavesNoTable(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, deltaCreateYAML)
	ctx := context.Background()
	fails := map[string]func(c *flightsql.Client, table string) error{
		"client cancel": func(c *flightsql.Client, table string) error {
			cctx, cancel := context.WithCancel(ctx)
			st := &stallingReader{RecordReader: reader(t, people(t, 0, 3), people(t, 3, 3)), sent: make(chan struct{}), release: make(chan struct{})}
			done := make(chan error, 1)
			go func() {
				_, err := c.ExecuteIngest(cctx, st, deltaCreate(table))
				done <- err
			}()
			<-st.sent
			time.Sleep(200 * time.Millisecond) // the gateway has the first batch
			invisible(t, g, table, "while the create streams")
			cancel()
			close(st.release)
			return <-done
		},
		"batch refused": func(c *flightsql.Client, table string) error {
			_, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3), bigPeople(t)), deltaCreate(table))
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
		invisible(t, g, table, name)
		var n int64
		var err error
		eventually(t, 5*time.Second, func() bool {
			n, err = g.flightClient(t).ExecuteIngest(ctx, reader(t, people(t, 10, 4)), deltaCreate(table))
			return err == nil
		})
		if err != nil || n != 4 {
			t.Fatalf("%s: retry with mode create: n=%d err=%v", name, n, err)
		}
		if got := queryOne(t, g, fmt.Sprintf(`SELECT count(*) FROM dl."default".%s`, table)); got != "4" {
			t.Errorf("%s: rows = %s, want the retry's 4", name, got)
		}
	}
}

// TestStagedCreateInTransaction: a table a transaction creates is
// invisible to another connection until COMMIT (a second write of the
// transaction goes into it), and absent after ROLLBACK.
func TestStagedCreateInTransaction(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, deltaCreateYAML)
	ctx := context.Background()
	c := g.flightClient(t)
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := deltaCreate("txc")
	o.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), o); err != nil {
		t.Fatal(err)
	}
	app := modeAppend("txc")
	app.Catalog, app.TransactionId = ptr("dl"), tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 3, 2)), app); err != nil {
		t.Fatalf("append in the transaction that creates the table: %v", err)
	}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 5, 1)), o); status.Code(err) != codes.AlreadyExists {
		t.Errorf("second create in the transaction: %v, want AlreadyExists", err)
	}
	invisible(t, g, "txc", "before COMMIT")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryOne(t, g, `SELECT count(*) FROM dl."default".txc`); got != "5" {
		t.Errorf("rows after COMMIT = %s, want 5", got)
	}

	rb, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o = deltaCreate("rolled")
	o.TransactionId = rb.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), o); err != nil {
		t.Fatal(err)
	}
	if err := rb.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	invisible(t, g, "rolled", "after ROLLBACK")
	if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 2)), deltaCreate("rolled")); err != nil || n != 2 {
		t.Fatalf("create after ROLLBACK: n=%d err=%v", n, err)
	}
}

// TestStagedCreateRace: of creates of one name at once exactly one lands
// and the others get AlreadyExists; of create_appends at once every one
// lands (the losers append), and no acknowledged row is lost.
func TestStagedCreateRace(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, deltaCreateYAML)
	const writers = 4
	race := func(table string, opts func(string) *flightsql.ExecuteIngestOpts) []error {
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			c := g.flightClient(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.ExecuteIngest(context.Background(), reader(t, people(t, 100*i, 5)), opts(table))
			}()
		}
		wg.Wait()
		return errs
	}
	won := 0
	for i, err := range race("raced", deltaCreate) {
		if err == nil {
			won++
		} else if status.Code(err) != codes.AlreadyExists {
			t.Errorf("create %d: %v, want AlreadyExists", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates landed, want 1", won)
	}
	if got := queryOne(t, g, `SELECT count(*) FROM dl."default".raced`); got != "5" {
		t.Errorf("rows = %s, want the winner's 5", got)
	}
	createAppend := func(table string) *flightsql.ExecuteIngestOpts {
		o := ingestOpts(table, flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionAppend)
		o.Catalog = ptr("dl")
		return o
	}
	for i, err := range race("appended", createAppend) {
		if err != nil {
			t.Errorf("create_append %d: %v", i, err)
		}
	}
	if got := queryOne(t, g, `SELECT count(*) FROM dl."default".appended`); got != fmt.Sprint(5*writers) {
		t.Errorf("rows = %s, want every create_append's: %d", got, 5*writers)
	}
}

// TestStagedCreateKilled: a gateway killed with SIGKILL while a create
// streams leaves no table: the gateway started again lists none, and a
// create of the name succeeds.
func TestStagedCreateKilled(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts two gateway processes")
	}
	dir := t.TempDir()
	yaml := fmt.Sprintf(`catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "%s/delta", create-namespaces: default}
default_catalog: dl
`, dir)
	p1 := startChild(t, dir, yaml)
	st := &stallingReader{RecordReader: reader(t, people(t, 0, 3), people(t, 3, 3)), sent: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := p1.flightClient(t).ExecuteIngest(context.Background(), st, deltaCreate("killed"))
		done <- err
	}()
	<-st.sent
	time.Sleep(200 * time.Millisecond) // the gateway has the first batch
	p1.kill(t)
	close(st.release)
	if err := <-done; err == nil {
		t.Fatal("the create into a killed gateway succeeded")
	}
	p2 := startChild(t, dir, yaml)
	if deltaLogExists(t, dir, "killed") {
		t.Fatal("the killed create left a table")
	}
	if n, err := p2.flightClient(t).ExecuteIngest(context.Background(), reader(t, people(t, 10, 4)), deltaCreate("killed")); err != nil || n != 4 {
		t.Fatalf("create after the kill: n=%d err=%v", n, err)
	}
	if got := queryOne(t, p2.gateway, `SELECT count(*) FROM dl."default".killed`); got != "4" {
		t.Errorf("rows = %s, want 4", got)
	}
}
