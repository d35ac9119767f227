package integration

import (
	"bytes"
	"context"
	"database/sql"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "github.com/uptrace/bun/driver/sqliteshim"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	_ "github.com/flightgw/flightgw/catalogs/iceberg"
	"github.com/flightgw/flightgw/engine"
	"github.com/flightgw/flightgw/server"
)

// syncBuffer collects the gateway's log lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// requireEngine skips a test that needs SQL in a build without the engine,
// so that a plain `go test ./...` passes; make sets the tag, and runs them.
func requireEngine(t *testing.T) {
	t.Helper()
	if !engine.Built {
		t.Skip("SQL engine not built: run with -tags=" + engine.BuildTag + " (make test does)")
	}
}

// gateway is a flightgw server on a free loopback port.
type gateway struct {
	addr    string
	dataDir string
	logs    *syncBuffer
	// shutdown stops the server as SIGTERM does; it runs at cleanup if the
	// test has not called it.
	shutdown func()
	// ownUnderscores are the names with "__" the test sends itself, which
	// its error messages may name (internal_names_test.go).
	ownUnderscores []string
}

// startGateway runs the real server with the embedded default in a fresh
// data dir, or with the YAML configuration given (where ${DATA} is the
// data dir). It stops when the test ends, and fails the test if a handler
// panicked.
func startGateway(t *testing.T, yaml string) *gateway {
	t.Helper()
	return startGatewayOn(t, "127.0.0.1:0", yaml)
}

// startGatewayOn is startGateway listening on listen.
func startGatewayOn(t *testing.T, listen, yaml string) *gateway {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("FLIGHTGW_DATA_DIR", dir)
	t.Setenv("FLIGHTGW_LISTEN", listen)
	path := ""
	if yaml != "" {
		path = filepath.Join(dir, "flightgw.yaml")
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(yaml, "${DATA}", dir)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := server.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			s.Shutdown()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	g := &gateway{addr: lis.Addr().String(), dataDir: dir, logs: logs, shutdown: shutdown}
	t.Cleanup(func() {
		shutdown()
		if strings.Contains(logs.String(), "panic in handler") {
			t.Errorf("a handler panicked:\n%s", logs.String())
		}
		g.checkNoInternals(t)
	})
	return g
}

// adbcConn opens an ADBC Flight SQL connection with extra database options.
func (g *gateway) adbcConn(t *testing.T, opts map[string]string) adbc.Connection {
	t.Helper()
	drv := adbcflight.NewDriver(memory.DefaultAllocator)
	o := map[string]string{adbc.OptionKeyURI: "grpc://" + g.addr}
	for k, v := range opts {
		o[k] = v
	}
	db, err := drv.NewDatabase(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn
}

// ingest bulk-ingests rec through ADBC and returns the row count.
func ingest(t *testing.T, cnxn adbc.Connection, tableName, mode string, rec arrow.RecordBatch, opts ...string) (int64, error) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	all := append([]string{adbc.OptionKeyIngestTargetTable, tableName, adbc.OptionKeyIngestMode, mode}, opts...)
	for i := 0; i+1 < len(all); i += 2 {
		if err := stmt.SetOption(all[i], all[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := stmt.Bind(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return stmt.ExecuteUpdate(context.Background())
}

// flightClient is the arrow-go Flight SQL client, for calls ADBC does not
// expose (explicit transaction ids, raw actions).
func (g *gateway) flightClient(t *testing.T, opts ...grpc.DialOption) *flightsql.Client {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	c, err := flightsql.NewClient(g.addr, nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readTable reads a table of the embedded catalog with iceberg-go's own
// SQL catalog and scan, independently of the gateway. It returns nil when
// the table has no snapshot.
func (g *gateway) readTable(t *testing.T, name string) arrow.Table {
	t.Helper()
	tbl := g.loadTable(t, name)
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(at.Release)
	return at
}

// catalog opens the gateway's embedded catalog beside it, as another
// engine sharing it would; it closes when the test ends.
func (g *gateway) catalog(t *testing.T) *sqlcat.Catalog {
	t.Helper()
	db, err := sql.Open("sqliteshim", "file:"+filepath.Join(g.dataDir, "catalog.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("lake", db, sqlcat.SQLite, ice.Properties{"warehouse": "file://" + filepath.Join(g.dataDir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func (g *gateway) loadTable(t *testing.T, name string) *table.Table {
	t.Helper()
	tbl, err := g.catalog(t).LoadTable(context.Background(), table.Identifier{"default", name})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return tbl
}

// evolve adds a nullable string column "extra" to a table, as another
// engine sharing the catalog would.
func (g *gateway) evolve(t *testing.T, name string) {
	t.Helper()
	tx := g.loadTable(t, name).NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, ice.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// rows returns the table's row count (0 for nil).
func rows(at arrow.Table) int64 {
	if at == nil {
		return 0
	}
	return at.NumRows()
}

// int64Column returns the values of an integer column as int64, sorted.
func int64Column(t *testing.T, at arrow.Table, col string) []int64 {
	t.Helper()
	if at == nil {
		return nil
	}
	idx := at.Schema().FieldIndices(col)
	if len(idx) == 0 {
		t.Fatalf("no column %s in %v", col, at.Schema())
	}
	var out []int64
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		switch c := chunk.(type) {
		case *array.Int64:
			out = append(out, c.Int64Values()...)
		case *array.Int32:
			for _, v := range c.Int32Values() {
				out = append(out, int64(v))
			}
		default:
			t.Fatalf("column %s is %s, not an integer", col, chunk.DataType())
		}
	}
	slices.Sort(out)
	return out
}

// parquetFiles lists every Parquet file under the warehouse: committed and
// staged alike.
func (g *gateway) parquetFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(g.dataDir, "warehouse"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// eventually polls cond for up to d.
func eventually(t *testing.T, d time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}
