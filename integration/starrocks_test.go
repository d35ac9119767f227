package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"

	_ "github.com/flightgw/flightgw/catalogs/starrocks"
)

// srEnv is a StarRocks cluster, or the stand-in, from the environment
// integration/starrocks-standin/run.sh sets (make test-starrocks).
type srEnv struct {
	t                         *testing.T
	g                         *gateway
	db                        string
	admin                     string // the stand-in's admin endpoints; "" on a real cluster
	sql                       *sql.DB
	fe, mysqlAddr, user, pass string
}

// startStarRocks starts a gateway with one starrocks catalog "sr" on a
// fresh database.
func startStarRocks(t *testing.T) *srEnv { return startStarRocksWith(t, nil) }

// startStarRocksWith is startStarRocks with more catalog properties, each
// made from the fresh database's name (e.g. the databases list).
func startStarRocksWith(t *testing.T, props func(db string) map[string]string) *srEnv {
	e := &srEnv{t: t, fe: os.Getenv("FLIGHTGW_STARROCKS_FE"), mysqlAddr: os.Getenv("FLIGHTGW_STARROCKS_MYSQL"),
		user: os.Getenv("FLIGHTGW_STARROCKS_USER"), pass: os.Getenv("FLIGHTGW_STARROCKS_PASSWORD"), admin: os.Getenv("FLIGHTGW_STARROCKS_ADMIN")}
	if e.fe == "" || e.mysqlAddr == "" {
		t.Skip("FLIGHTGW_STARROCKS_FE and FLIGHTGW_STARROCKS_MYSQL are not set: run make test-starrocks (MariaDB and the StarRocks stand-in), or point them at a cluster")
	}
	if e.user == "" {
		e.user = "root"
	}
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.InterpolateParams = e.user, e.pass, "tcp", e.mysqlAddr, true
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	e.sql = sql.OpenDB(conn)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	e.db = "fgw_" + hex.EncodeToString(b)
	if _, err := e.sql.Exec("CREATE DATABASE `" + e.db + "`"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = e.sql.Exec("DROP DATABASE IF EXISTS `" + e.db + "`")
		_ = e.sql.Close()
	})
	e.reset()
	var extra strings.Builder
	if props != nil {
		for k, v := range props(e.db) {
			fmt.Fprintf(&extra, "      %s: %q\n", k, v)
		}
	}
	e.g = startGateway(t, fmt.Sprintf(`catalogs:
  - name: sr
    type: starrocks
    properties:
      fe_http: %s
      mysql: %s
      user: %s
      password: %q
      spool_dir: ${DATA}
      timeout: 10s
%s`, e.fe, e.mysqlAddr, e.user, e.pass, extra.String()))
	return e
}

// opts is an ingest into table of the fresh database.
func (e *srEnv) opts(table string, create bool) *flightsql.ExecuteIngestOpts {
	o := modeAppend(table)
	if create {
		o = modeCreate(table)
	}
	cat, db := "sr", e.db
	o.Catalog, o.Schema = &cat, &db
	return o
}

// count reads a table's rows over the MySQL protocol, beside the gateway.
func (e *srEnv) count(table string) int64 {
	e.t.Helper()
	var n int64
	if err := e.sql.QueryRow("SELECT COUNT(*) FROM `" + e.db + "`.`" + table + "`").Scan(&n); err != nil {
		e.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// needStandin skips a test that injects faults on a real cluster.
func (e *srEnv) needStandin() {
	if e.admin == "" {
		e.t.Skip("fault injection needs the stand-in (FLIGHTGW_STARROCKS_ADMIN)")
	}
}

func (e *srEnv) fault(op, kind string, times int) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"op": op, "kind": kind, "times": times})
	resp, err := http.Post(e.admin+"/admin/faults", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		e.t.Fatalf("arm fault %s=%s: %v %v", op, kind, resp, err)
	}
	resp.Body.Close()
}

func (e *srEnv) reset() {
	if e.admin == "" {
		return
	}
	resp, err := http.Post(e.admin+"/admin/reset", "", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
}

func (e *srEnv) calls(op string) int {
	e.t.Helper()
	return e.adminState().Counts[op]
}

// queries are the statements the stand-in's MySQL listener forwarded
// since the last reset.
func (e *srEnv) queries() []string {
	e.t.Helper()
	return e.adminState().Queries
}

type srAdmin struct {
	Counts  map[string]int
	Queries []string
}

func (e *srEnv) adminState() srAdmin {
	e.t.Helper()
	resp, err := http.Get(e.admin + "/admin/counts")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var c srAdmin
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func TestStarRocksIngestAutocommitAndTransactions(t *testing.T) {
	e := startStarRocks(t)
	auto := e.g.adbcConn(t, nil)
	target := []string{adbc.OptionValueIngestTargetCatalog, "sr", adbc.OptionValueIngestTargetDBSchema, e.db}
	if n, err := ingest(t, auto, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 3), target...); err != nil || n != 3 {
		t.Fatalf("autocommit create: %d, %v", n, err)
	}
	if n, err := ingest(t, auto, "people", adbc.OptionValueIngestModeAppend, people(t, 3, 2), target...); err != nil || n != 2 {
		t.Fatalf("autocommit append: %d, %v", n, err)
	}
	if got := e.count("people"); got != 5 {
		t.Fatalf("rows after two autocommit ingests = %d, want 5", got)
	}

	cnxn := e.g.adbcConn(t, nil)
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Rollback: nothing appears.
	if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeAppend, people(t, 10, 4), target...); err != nil {
		t.Fatal(err)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.count("people"); got != 5 {
		t.Fatalf("rows after a rollback = %d, want 5", got)
	}
	// Commit: two ingests, invisible until the commit, then all at once.
	for _, from := range []int{20, 30} {
		if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeAppend, people(t, from, 3), target...); err != nil {
			t.Fatal(err)
		}
		if got := e.count("people"); got != 5 {
			t.Fatalf("uncommitted rows visible: %d", got)
		}
	}
	if err := cnxn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.count("people"); got != 11 {
		t.Fatalf("rows after the commit = %d, want 11", got)
	}
	if e.admin != "" {
		if n := e.calls("begin"); n != 4 {
			t.Errorf("stream load transactions begun = %d, want 4 (2 autocommit ingests, the rolled back one, one for the committed transaction's two ingests)", n)
		}
	}
}

func TestStarRocksLostReplyAfterCommit(t *testing.T) {
	e := startStarRocks(t)
	e.needStandin()
	c := e.g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), e.opts("lost", true)); err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := e.opts("lost", false)
	o.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 6)), o); err != nil {
		t.Fatal(err)
	}
	// The commit applies but its reply is lost, and the label's state
	// cannot be read either: the outcome is unknown.
	e.fault("commit", "lost_reply", 1)
	e.fault("get_load_state", "fail", 0)
	commit := pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT
	assertStatus(t, endTransaction(t, c, tx.ID(), commit), codes.Unavailable, "lost")
	e.reset()
	// The client retries: the commit is recognised by its label.
	if err := endTransaction(t, c, tx.ID(), commit); err != nil {
		t.Fatalf("retried EndTransaction: %v", err)
	}
	if got := e.count("lost"); got != 7 {
		t.Fatalf("rows after a retried commit = %d, want 7 (not doubled)", got)
	}
}

func TestStarRocksPublishTimeoutNotRetried(t *testing.T) {
	e := startStarRocks(t)
	e.needStandin()
	c := e.g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), e.opts("slow", true)); err != nil {
		t.Fatal(err)
	}
	e.reset()
	e.fault("commit", "publish_timeout", 1)
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 1, 4)), e.opts("slow", false)); err != nil {
		t.Fatalf("ingest whose commit timed out publishing: %v (it committed)", err)
	}
	if n := e.calls("commit"); n != 1 {
		t.Fatalf("commit calls = %d, want 1: Publish Timeout is committed and never retried", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.count("slow") != 5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := e.count("slow"); got != 5 {
		t.Fatalf("rows once published = %d, want 5", got)
	}
}

func TestStarRocksDroppedLoadRollsBack(t *testing.T) {
	e := startStarRocks(t)
	e.needStandin()
	c := e.g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 2)), e.opts("dropped", true)); err != nil {
		t.Fatal(err)
	}
	e.fault("load", "drop", 1)
	_, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 3), people(t, 20, 3)), e.opts("dropped", false))
	assertStatus(t, err, codes.Unavailable, "load")
	if got := e.count("dropped"); got != 2 {
		t.Fatalf("rows after a load dropped mid-stream = %d, want 2", got)
	}
	if n := e.calls("rollback"); n < 1 {
		t.Errorf("rollback calls = %d: the dropped load's transaction was not rolled back", n)
	}
}

func TestStarRocksBadTypesNamed(t *testing.T) {
	e := startStarRocks(t)
	c := e.g.flightClient(t)
	ctx := context.Background()
	mem := memory.DefaultAllocator
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "took", Type: &arrow.DurationType{Unit: arrow.Second}, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	b.Field(1).(*array.DurationBuilder).Append(5)
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := c.ExecuteIngest(ctx, reader(t, rec), e.opts("odd", true))
	assertStatus(t, err, codes.InvalidArgument, "took")

	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 2)), e.opts("typed", true)); err != nil {
		t.Fatal(err)
	}
	ss := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}}, nil)
	sb := array.NewRecordBuilder(mem, ss)
	defer sb.Release()
	sb.Field(0).(*array.StringBuilder).Append("seven")
	srec := sb.NewRecordBatch()
	defer srec.Release()
	_, err = c.ExecuteIngest(ctx, reader(t, srec), e.opts("typed", false))
	assertStatus(t, err, codes.InvalidArgument, `"id"`)
	if got := e.count("typed"); got != 2 {
		t.Fatalf("rows after a refused batch = %d, want 2", got)
	}
}

func TestStarRocksMetadata(t *testing.T) {
	e := startStarRocks(t)
	c := e.g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), e.opts("listed", true)); err != nil {
		t.Fatal(err)
	}
	cat := "sr"
	info, err := c.GetTables(ctx, &flightsql.GetTablesOpts{Catalog: &cat, DbSchemaFilterPattern: &e.db, IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	found := false
	for rdr.Next() {
		rec := rdr.RecordBatch()
		names := rec.Column(2).(*array.String)
		for i := range names.Len() {
			found = found || names.Value(i) == "listed"
		}
	}
	if !found {
		t.Fatalf("GetTables of %s does not list table listed", e.db)
	}
}

func TestStarRocksIngestTableOptions(t *testing.T) {
	e := startStarRocks(t)
	c := e.g.flightClient(t)
	ctx := context.Background()
	o := e.opts("keyed", true)
	o.Options = map[string]string{"primary-key": "id", "buckets": "4"}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), o); err != nil {
		t.Fatalf("create with primary-key: %v", err)
	}
	// The key reached the DDL: the table has a primary key on id.
	var key string
	err := e.sql.QueryRow("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'keyed' AND COLUMN_KEY = 'PRI'", e.db).Scan(&key)
	if err != nil || key != "id" {
		t.Fatalf("primary key column of keyed = %q, %v; want id", key, err)
	}
	if got := e.count("keyed"); got != 3 {
		t.Fatalf("rows = %d, want 3", got)
	}
	bad := e.opts("unkeyed", true)
	bad.Options = map[string]string{"bucket-key": "id"}
	_, err = c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), bad)
	assertStatus(t, err, codes.InvalidArgument, "bucket-key")
	bad.Options = map[string]string{"primary-key": "name"}
	_, err = c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), bad)
	assertStatus(t, err, codes.InvalidArgument, `"name"`)
}

func TestStarRocksQueryPushedDown(t *testing.T) {
	requireEngine(t)
	e := startStarRocks(t)
	e.needStandin()
	c := e.g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), e.opts("people", true)); err != nil {
		t.Fatal(err)
	}
	orders := arrow.NewSchema([]arrow.Field{{Name: "oid", Type: arrow.PrimitiveTypes.Int64}, {Name: "pid", Type: arrow.PrimitiveTypes.Int64}, {Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	rec := batchFromJSON(t, orders, func(i int) string { return fmt.Sprintf(`{"oid": %d, "pid": %d, "qty": %d}`, i, i%2, i+1) }, 5)
	defer rec.Release()
	if _, err := c.ExecuteIngest(ctx, reader(t, rec), e.opts("orders", true)); err != nil {
		t.Fatal(err)
	}
	cnxn := e.g.adbcConn(t, nil)
	e.reset()
	q := fmt.Sprintf(`SELECT p.name, count(*) AS n, sum(o.qty) AS total FROM sr.%s.people p JOIN sr.%s.orders o ON o.pid = p.id WHERE o.qty > 1 GROUP BY p.name`, e.db, e.db)
	got := mustRows(t, cnxn, q, nil)
	slices.Sort(got)
	// orders 1..4 (qty 2..5): pid 0 has oids 2, 4 (qty 3, 5), pid 1 has 1, 3 (qty 2, 4).
	if want := []string{"p0|2|8", "p1|2|6"}; !slices.Equal(got, want) {
		t.Fatalf("join + group by = %v, want %v", got, want)
	}
	// The query went to StarRocks whole: the join and the grouping in one
	// statement over both tables, and no scan of either table alone.
	want := fmt.Sprintf("FROM `%s`.`people` p JOIN `%s`.`orders` o ON o.pid = p.id WHERE o.qty > 1 GROUP BY p.name", e.db, e.db)
	whole := 0
	for _, s := range e.queries() {
		if strings.Contains(s, want) {
			whole++
		} else if strings.Contains(s, "`people`") || strings.Contains(s, "`orders`") {
			t.Errorf("a statement other than the pushed query read a table: %s", s)
		}
	}
	if whole != 1 {
		t.Fatalf("pushed queries seen = %d, want 1 (%q in %q)", whole, want, e.queries())
	}
	// A query outside the portable rule is the engine's: a scan per table.
	e.reset()
	got = mustRows(t, cnxn, fmt.Sprintf(`SELECT p.name, count(*) AS n FROM sr.%s.people p JOIN sr.%s.orders o ON o.pid = p.id GROUP BY p.name ORDER BY p.name`, e.db, e.db), nil)
	if want := []string{"p0|3", "p1|2"}; !slices.Equal(got, want) {
		t.Fatalf("ordered join = %v, want %v", got, want)
	}
	for _, s := range e.queries() {
		if strings.Contains(s, "JOIN") {
			t.Errorf("an ORDER BY query was pushed down: %s", s)
		}
	}
}
