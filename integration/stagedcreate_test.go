package integration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stagedBackend is a backend whose creates are staged (a table exists
// only once its first commit lands), as the gateway is configured for it
// (yaml, where ${DATA} is the data directory; the smallest batch limit).
type stagedBackend struct {
	name, catalog, yaml string
	// exists reports whether the table default.<table> under dataDir
	// exists in the backend's own terms, read beside the gateway.
	exists func(t *testing.T, dataDir, table string) bool
	// files lists the data files staged for default.<table> under
	// dataDir, where the table gets them (nil: not checked).
	files func(t *testing.T, dataDir, table string) []string
}

// stagedBackends: a Delta catalog (a table exists once its log version 0
// does), the embedded Iceberg lake (SQLite: once its row does) and a
// Paimon warehouse (once its schema/schema-0 does).
var stagedBackends = []stagedBackend{
	{name: "delta", catalog: "dl", yaml: `
limits: {max_batch_bytes: 1048576}
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: default}
default_catalog: dl
`, exists: deltaLogExists},
	{name: "iceberg", catalog: "lake", yaml: "limits: {max_batch_bytes: 1048576}\n", exists: icebergTableExists, files: stagedFiles},
	{name: "paimon", catalog: "pm", yaml: `
limits: {max_batch_bytes: 1048576}
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`, exists: paimonTableExists, files: paimonStagedFiles},
}

func (be stagedBackend) create(table string) *flightsql.ExecuteIngestOpts {
	return createOpts(table, be.catalog)
}

// count is the query of a table's rows through the backend's catalog.
func (be stagedBackend) count(table string) string {
	return fmt.Sprintf(`SELECT count(*) FROM %s."default".%s`, be.catalog, table)
}

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

// paimonTableExists reports whether the Paimon table default.<table> of
// the warehouse under dataDir exists: whether its schema directory holds a
// schema file, as Paimon's FileSystemCatalog.tableExists asks.
func paimonTableExists(t *testing.T, dataDir, table string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "paimon", "default.db", table, "schema", "schema-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files) > 0
}

// icebergTableExists reports whether the embedded lake under dataDir has
// the table default.<table>: a row in its catalog, or a metadata file.
func icebergTableExists(t *testing.T, dataDir, name string) bool {
	t.Helper()
	_, err := (&gateway{dataDir: dataDir}).catalog(t).LoadTable(context.Background(), table.Identifier{"default", name})
	if err != nil && !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatal(err)
	}
	files, werr := filepath.Glob(filepath.Join(dataDir, "warehouse", "default.db", name, "metadata", "*.metadata.json"))
	if werr != nil {
		t.Fatal(werr)
	}
	return err == nil || len(files) > 0
}

// invisible checks that another connection does not see table, nor the
// backend beside the gateway.
func invisible(t *testing.T, g *gateway, be stagedBackend, table, when string) {
	t.Helper()
	if _, err := queryRows(t, g.adbcConn(t, nil), be.count(table), nil); err == nil {
		t.Errorf("%s: another connection sees table %s", when, table)
	}
	if be.exists(t, g.dataDir, table) {
		t.Errorf("%s: table %s exists in the %s catalog", when, table, be.name)
	}
}

// TestStagedCreateFailedLeavesNoTable: on a backend that stages creates
// the table does not exist while the create streams, and a create that
// fails (the client cancels, a batch is refused) leaves none: the retry
// with mode create succeeds.
func TestStagedCreateFailedLeavesNoTable(t *testing.T) {
	requireEngine(t)
	for _, be := range stagedBackends {
		t.Run(be.name, func(t *testing.T) { stagedCreateFailed(t, be) })
	}
}

func stagedCreateFailed(t *testing.T, be stagedBackend) {
	g := startGateway(t, be.yaml)
	ctx := context.Background()
	fails := map[string]func(c *flightsql.Client, table string) error{
		"client cancel": func(c *flightsql.Client, table string) error {
			cctx, cancel := context.WithCancel(ctx)
			st := &stallingReader{RecordReader: reader(t, people(t, 0, 3), people(t, 3, 3)), sent: make(chan struct{}), release: make(chan struct{})}
			done := make(chan error, 1)
			go func() {
				_, err := c.ExecuteIngest(cctx, st, be.create(table))
				done <- err
			}()
			<-st.sent
			time.Sleep(200 * time.Millisecond) // the gateway has the first batch
			invisible(t, g, be, table, "while the create streams")
			cancelStalled(cancel, st)
			return <-done
		},
		"batch refused": func(c *flightsql.Client, table string) error {
			_, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3), bigPeople(t)), be.create(table))
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
		invisible(t, g, be, table, name)
		var n int64
		var err error
		eventually(t, 5*time.Second, func() bool {
			n, err = g.flightClient(t).ExecuteIngest(ctx, reader(t, people(t, 10, 4)), be.create(table))
			return err == nil
		})
		if err != nil || n != 4 {
			t.Fatalf("%s: retry with mode create: n=%d err=%v", name, n, err)
		}
		if got := queryOne(t, g, be.count(table)); got != "4" {
			t.Errorf("%s: rows = %s, want the retry's 4", name, got)
		}
	}
}

// TestStagedCreateInTransaction: a table a transaction creates is
// invisible to another connection until COMMIT (a second write of the
// transaction goes into it), and absent after ROLLBACK.
func TestStagedCreateInTransaction(t *testing.T) {
	requireEngine(t)
	for _, be := range stagedBackends {
		t.Run(be.name, func(t *testing.T) { stagedCreateInTransaction(t, be) })
	}
}

func stagedCreateInTransaction(t *testing.T, be stagedBackend) {
	g := startGateway(t, be.yaml)
	ctx := context.Background()
	c := g.flightClient(t)
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := be.create("txc")
	o.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), o); err != nil {
		t.Fatal(err)
	}
	app := modeAppend("txc")
	app.Catalog, app.TransactionId = ptr(be.catalog), tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 3, 2)), app); err != nil {
		t.Fatalf("append in the transaction that creates the table: %v", err)
	}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 5, 1)), o); status.Code(err) != codes.AlreadyExists {
		t.Errorf("second create in the transaction: %v, want AlreadyExists", err)
	}
	invisible(t, g, be, "txc", "before COMMIT")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryOne(t, g, be.count("txc")); got != "5" {
		t.Errorf("rows after COMMIT = %s, want 5", got)
	}

	rb, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o = be.create("rolled")
	o.TransactionId = rb.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), o); err != nil {
		t.Fatal(err)
	}
	if err := rb.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	invisible(t, g, be, "rolled", "after ROLLBACK")
	if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 2)), be.create("rolled")); err != nil || n != 2 {
		t.Fatalf("create after ROLLBACK: n=%d err=%v", n, err)
	}
}

// TestStagedCreateRace: of creates of one name at once exactly one lands
// and the others get AlreadyExists; of create_appends at once every one
// lands (the losers append), and no acknowledged row is lost.
func TestStagedCreateRace(t *testing.T) {
	requireEngine(t)
	for _, be := range stagedBackends {
		t.Run(be.name, func(t *testing.T) { stagedCreateRace(t, be) })
	}
}

func stagedCreateRace(t *testing.T, be stagedBackend) {
	g := startGateway(t, be.yaml)
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
	for i, err := range race("raced", be.create) {
		if err == nil {
			won++
		} else if status.Code(err) != codes.AlreadyExists {
			t.Errorf("create %d: %v, want AlreadyExists", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates landed, want 1", won)
	}
	if got := queryOne(t, g, be.count("raced")); got != "5" {
		t.Errorf("rows = %s, want the winner's 5", got)
	}
	createAppend := func(table string) *flightsql.ExecuteIngestOpts {
		o := ingestOpts(table, flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionAppend)
		o.Catalog = ptr(be.catalog)
		return o
	}
	for i, err := range race("appended", createAppend) {
		if err != nil {
			t.Errorf("create_append %d: %v", i, err)
		}
	}
	if got := queryOne(t, g, be.count("appended")); got != fmt.Sprint(5*writers) {
		t.Errorf("rows = %s, want every create_append's: %d", got, 5*writers)
	}
}

// TestStagedCreateKilled: a gateway killed with SIGKILL while two creates
// stream leaves no table: the gateway started again lists none, and a
// create of one name succeeds. The killed creates' staged files belong to
// no table: the reclaimer (run here every 200ms, min age 2s) deletes
// them, those of the name created again as the new table's orphans, those
// of the name never created again by the create's marks, with the marks
// and the directory, while the new create, younger, keeps its files.
func TestStagedCreateKilled(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts two gateway processes per backend")
	}
	for _, be := range stagedBackends {
		t.Run(be.name, func(t *testing.T) { stagedCreateKilled(t, be) })
	}
}

func stagedCreateKilled(t *testing.T, be stagedBackend) {
	dir := t.TempDir()
	yaml := strings.ReplaceAll(be.yaml, "${DATA}", dir)
	p1 := startChild(t, dir, yaml)
	done := make(chan error, 2)
	var stalled []*stallingReader
	for _, name := range []string{"killed", "orphan"} {
		st := &stallingReader{RecordReader: reader(t, people(t, 0, 3), people(t, 3, 3)), sent: make(chan struct{}), release: make(chan struct{})}
		stalled = append(stalled, st)
		go func() {
			_, err := p1.flightClient(t).ExecuteIngest(context.Background(), st, be.create(name))
			done <- err
		}()
		<-st.sent
	}
	staged := func(table string) []string {
		if be.files == nil {
			return nil
		}
		return be.files(t, dir, table)
	}
	if be.files != nil {
		waitUntil(t, "the creates staged data files", func() bool { return len(staged("killed")) > 0 && len(staged("orphan")) > 0 }, p1.logs)
	} else {
		time.Sleep(200 * time.Millisecond) // the gateway has the first batches
	}
	p1.kill(t)
	for _, st := range stalled {
		close(st.release)
	}
	for range stalled {
		if err := <-done; err == nil {
			t.Fatal("a create into a killed gateway succeeded")
		}
	}
	left := staged("killed")
	orphan := be.dirFiles(t, dir, "orphan")
	if len(orphan) == 0 {
		t.Fatal("the killed create of orphan left no file (not even its mark)")
	}
	p2 := startChild(t, dir, yaml+"reclaim: {interval: 200ms, min_age: 2s}\n")
	for _, name := range []string{"killed", "orphan"} {
		if be.exists(t, dir, name) {
			t.Fatalf("the killed create of %s left a table", name)
		}
	}
	if n, err := p2.flightClient(t).ExecuteIngest(context.Background(), reader(t, people(t, 10, 4)), be.create("killed")); err != nil || n != 4 {
		t.Fatalf("create after the kill: n=%d err=%v", n, err)
	}
	if got := queryOne(t, p2.gateway, be.count("killed")); got != "4" {
		t.Errorf("rows = %s, want 4", got)
	}
	// The directory goes after the marks (lake.Reclaimer tidies last):
	// both are waited for.
	orphanDir := filepath.Join(be.warehouse(dir), "default"+be.dbSuffix(), "orphan")
	waitUntil(t, "the reclaimer deleted the files of the create never made again, its marks and its directory", func() bool {
		_, err := os.Stat(orphanDir)
		return len(be.dirFiles(t, dir, "orphan")) == 0 && errors.Is(err, os.ErrNotExist)
	}, p2.logs)
	if be.exists(t, dir, "orphan") {
		t.Error("the reclaim of a killed create made a table")
	}
	if be.files == nil {
		return
	}
	if len(left) == 0 {
		t.Fatal("the killed create staged no data file")
	}
	waitUntil(t, "the reclaimer deleted the killed create's files", func() bool {
		for _, f := range left {
			if _, err := os.Stat(f); err == nil {
				return false
			}
		}
		return true
	}, p2.logs)
	if got := queryOne(t, p2.gateway, be.count("killed")); got != "4" {
		t.Errorf("rows after the reclaim = %s, want 4", got)
	}
}

// warehouse is the backend's warehouse directory under dataDir.
func (be stagedBackend) warehouse(dataDir string) string {
	switch be.name {
	case "iceberg":
		return filepath.Join(dataDir, "warehouse")
	default:
		return filepath.Join(dataDir, be.name)
	}
}

// dbSuffix ends a namespace's directory name (Iceberg's and Paimon's
// databases are <name>.db).
func (be stagedBackend) dbSuffix() string {
	if be.name == "delta" {
		return ""
	}
	return ".db"
}

// dirFiles lists every file a create of default.<table> leaves: under the
// table's directory, and its create marks.
func (be stagedBackend) dirFiles(t *testing.T, dataDir, table string) []string {
	t.Helper()
	wh := be.warehouse(dataDir)
	var out []string
	for _, root := range []string{filepath.Join(wh, "default"+be.dbSuffix(), table), filepath.Join(wh, ".flightgw-creates", "default", table)} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
