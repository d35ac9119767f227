package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/codec/actions"
)

// TestReadmeGoExample runs the README's Go example, line for line, so the
// README stays true.
func TestReadmeGoExample(t *testing.T) {
	g := startGateway(t, "")
	ctx := context.Background()
	record := people(t, 0, 3)

	drv := flightsql.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + g.addr})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cnxn.Close()
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	stmt.SetOption(adbc.OptionKeyIngestTargetTable, "people")
	stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeCreateAppend)
	if err := stmt.Bind(ctx, record); err != nil {
		t.Fatal(err)
	}
	n, err := stmt.ExecuteUpdate(ctx)
	if err != nil || n != 3 {
		t.Fatalf("rows=%d err=%v", n, err)
	}
	// The transaction creates the table: there is none before COMMIT.
	if _, err := g.catalog(t).LoadTable(ctx, table.Identifier{"default", "people"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("table before commit: %v, want none", err)
	}
	if err := cnxn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rows(g.readTable(t, "people")); got != 3 {
		t.Fatalf("after commit: %d", got)
	}
}

// TestReadmePythonExamples runs the README's Python examples, as written,
// with the project venv (make venv) against a gateway, offline: the ADBC
// ingest and the query (one script: the query follows the ingest), then
// pyiceberg and DuckDB each on its own, so that neither depends on a
// variable of another.
func TestReadmePythonExamples(t *testing.T) {
	requireEngine(t)
	python, err := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no project venv (%v): make venv creates it", err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, b := range pythonBlocks(string(readme)) {
		// The distributed-commit example runs in
		// integration/python/test_commit_messages.py.
		if !strings.Contains(b, "PrepareCommit") && !strings.Contains(b, "BeginTransaction") {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) != 4 {
		t.Fatalf("README has %d Python examples besides the distributed commit, the test knows 4", len(blocks))
	}
	g := startGateway(t, "")
	// Run "from the directory of make run": data/ is the gateway's.
	cwd := t.TempDir()
	if err := os.Symlink(g.dataDir, filepath.Join(cwd, "data")); err != nil {
		t.Fatal(err)
	}
	run := func(name, code string) string {
		t.Helper()
		cmd := exec.Command(python, "-c", strings.ReplaceAll(code, "127.0.0.1:32010", g.addr))
		cmd.Dir = cwd
		// Offline: no proxy, no index.
		cmd.Env = append(os.Environ(), "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "PIP_NO_INDEX=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s example: %v\n%s", name, err, out)
		}
		return string(out)
	}
	out := run("ADBC and query", blocks[0]+"\n"+blocks[1])
	if !strings.Contains(out, "name: [[") {
		t.Errorf("query example printed:\n%s", out)
	}
	// Six rows: three created, three appended and committed.
	for i, c := range []struct {
		name string
		want []string
	}{
		{"pyiceberg", []string{`id: [[1,2,3],[1,2,3]]`}},
		{"DuckDB", []string{"│     1 │ a       │\n│     1 │ a       │", "│     3 │ c       │\n│     3 │ c       │"}},
	} {
		out := run(c.name, blocks[2+i])
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s example printed:\n%s\nwant %q in it", c.name, out, w)
			}
		}
	}
}

// pythonBlocks are the ```python blocks of a Markdown text.
func pythonBlocks(md string) []string {
	var out []string
	for _, part := range strings.Split(md, "```python\n")[1:] {
		if end := strings.Index(part, "```"); end >= 0 {
			out = append(out, part[:end])
		}
	}
	return out
}

// TestReadmeGoCommitExample runs the README's Go example of the
// distributed commit, line for line, on two worker gateways and a
// coordinator that share a catalog and the signing key.
func TestReadmeGoCommitExample(t *testing.T) {
	requireEngine(t)
	shared := t.TempDir()
	conf := sharedLake(shared, "readme-key")
	ctx := context.Background()
	type worker struct {
		client *fsql.Client
		tx     *fsql.Txn
	}
	var workers []worker
	for i := range 2 {
		w := worker{client: startGateway(t, conf).flightClient(t)}
		rdr := reader(t, people(t, i*10, 10))
		// The README's worker (flightsql is fsql here).
		err := func() error {
			tx, err := w.client.BeginTransaction(ctx)
			if err != nil {
				return err
			}
			_, err = w.client.ExecuteIngest(ctx, rdr, &fsql.ExecuteIngestOpts{ // rdr: an array.RecordReader
				Table:         "orders",
				TransactionId: tx.ID(),
				TableDefinitionOptions: &fsql.TableDefinitionOptions{
					IfNotExist: fsql.TableDefinitionOptionsTableNotExistOptionCreate,
					IfExists:   fsql.TableDefinitionOptionsTableExistsOptionAppend,
				},
			})
			w.tx = tx
			return err
		}()
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	coordinator := startGateway(t, conf).flightClient(t)

	var snapshot int64
	var st actions.StatusResponse
	err := func() error {
		var all [][]client.TablePayloads
		for _, w := range workers { // each worker, on its own gateway
			prepared, err := client.PrepareCommit(ctx, w.client, string(w.tx.ID()))
			if err != nil {
				return err
			}
			all = append(all, prepared)
		}
		// The coordinator: every worker's payloads, one list per table, committed once.
		done, err := client.CommitMessages(ctx, coordinator, "job-42", client.Merge(all...))
		if err != nil {
			return err // Unavailable: retry with the same commit id, or GetCommitStatus
		}
		snapshot = done.Tables[0].SnapshotID
		st, err = client.GetCommitStatus(ctx, coordinator, "job-42", actions.TableRef{Table: "orders"})
		return err
	}()
	if err != nil {
		t.Fatal(err)
	}
	if !st.Landed || st.SnapshotID != snapshot || st.Rows != 20 {
		t.Fatalf("GetCommitStatus: %+v, want landed in snapshot %d with 20 rows", st, snapshot)
	}
	if got := countIn(t, coordinator, "orders"); got != "20" {
		t.Fatalf("%s rows after the commit, want 20", got)
	}
}
