package integration

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// queryRows runs a query through ADBC, with an optional row of
// parameters, and renders each row as "a|b|c".
func queryRows(t *testing.T, cnxn adbc.Connection, q string, params arrow.RecordBatch) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return nil, err
	}
	if params != nil {
		if err := stmt.Prepare(ctx); err != nil {
			return nil, err
		}
		if err := stmt.Bind(ctx, params); err != nil {
			return nil, err
		}
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return renderRows(rdr)
}

// renderRows reads a result whole, each row rendered as "a|b|c".
func renderRows(rdr array.RecordReader) ([]string, error) {
	var out []string
	for rdr.Next() {
		b := rdr.RecordBatch()
		for i := range int(b.NumRows()) {
			cells := make([]string, b.NumCols())
			for j, c := range b.Columns() {
				cells[j] = c.ValueStr(i)
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
	return out, rdr.Err()
}

func mustRows(t *testing.T, cnxn adbc.Connection, q string, params arrow.RecordBatch) []string {
	t.Helper()
	out, err := queryRows(t, cnxn, q, params)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func execUpdate(t *testing.T, cnxn adbc.Connection, q string) (int64, error) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return 0, err
	}
	return stmt.ExecuteUpdate(context.Background())
}

func TestQueryThroughADBC(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	for i := range 4 {
		if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreateAppend, people(t, i*250, 250)); err != nil {
			t.Fatal(err)
		}
	}
	if n := rows(g.readTable(t, "people")); n != 1000 {
		t.Fatalf("table has %d rows", n)
	}
	// Scores are i+0.5 for i in 0..249 in each of the four ingests.
	cases := []struct {
		q    string
		want []string
	}{
		{`SELECT count(*), sum(id), sum(score) FROM lake."default".people`, []string{"1000|499500|125000"}},
		{`SELECT count(*) FROM "default".people WHERE id >= 900`, []string{"100"}},
		{`SELECT id, name FROM people ORDER BY id DESC LIMIT 2`, []string{"999|p999", "998|p998"}},
		{`SELECT id % 2 AS parity, count(*) FROM people GROUP BY parity ORDER BY parity`, []string{"0|500", "1|500"}},
		{`SELECT a.id, b.name FROM people a JOIN people b ON a.id = b.id + 1 WHERE a.id < 3 ORDER BY 1`, []string{"1|p0", "2|p1"}},
	}
	for _, c := range cases {
		if got := mustRows(t, cnxn, c.q, nil); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: got %q, want %q", c.q, got, c.want)
		}
	}
	params := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "lo", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String}}, nil), func(int) string { return `{"lo": 10, "name": "p12"}` }, 1)
	if got := mustRows(t, cnxn, `SELECT id FROM people WHERE id > ? AND name = ?`, params); strings.Join(got, ",") != "12" {
		t.Errorf("parameterized query: %q", got)
	}

	// INSERT through SQL lands in the table, read independently.
	if n, err := execUpdate(t, cnxn, `INSERT INTO people VALUES (5000, 'x', 1.5), (5001, NULL, NULL)`); err != nil || n != 2 {
		t.Fatalf("insert values: %d, %v", n, err)
	}
	if n, err := execUpdate(t, cnxn, `INSERT INTO people (id, name) SELECT id + 10000, name FROM people WHERE id < 10`); err != nil || n != 10 {
		t.Fatalf("insert select: %d, %v", n, err)
	}
	ids := int64Column(t, g.readTable(t, "people"), "id")
	if len(ids) != 1012 || ids[len(ids)-1] != 10009 {
		t.Fatalf("after inserts: %d rows, last id %d", len(ids), ids[len(ids)-1])
	}
	if got := mustRows(t, cnxn, `SELECT count(*) FROM people WHERE score IS NULL`, nil); got[0] != "11" {
		t.Errorf("null scores after inserts: %q", got)
	}
}

func TestQueryPrunesFiles(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	for i := range 5 {
		if _, err := ingest(t, cnxn, "pruned", adbc.OptionValueIngestModeCreateAppend, people(t, i*100, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustRows(t, cnxn, `SELECT count(*), min(id) FROM pruned WHERE id >= 420`, nil); got[0] != "80|420" {
		t.Fatalf("selective query: %q", got)
	}
	// The scan read one of the five files: the column stats pruned the rest.
	if !strings.Contains(g.logs.String(), "files_planned=1 files_total=5") {
		t.Fatalf("no pruned scan in the logs:\n%s", grepLines(g.logs.String(), "query scan"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestQueryBadInput(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "tickets: {signing_key: test-key-123}\n")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "t", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	c := g.flightClient(t)
	ctx := context.Background()
	cases := []struct {
		q    string
		code codes.Code
		msg  string
	}{
		{`SELEC * FROM t`, codes.InvalidArgument, "syntax error"},
		{`SELECT * FROM nope`, codes.NotFound, "nope"},
		{`SELECT nope FROM t`, codes.InvalidArgument, "nope"},
		{`SELECT * FROM read_parquet('/etc/passwd')`, codes.PermissionDenied, "disabled"},
		{`SELECT * FROM read_csv('/etc/passwd')`, codes.PermissionDenied, "disabled"},
		{`SELECT * FROM read_text('/etc/hostname')`, codes.PermissionDenied, "disabled"},
		{`ATTACH '/tmp/x.db' AS x`, codes.Unimplemented, "ATTACH"},
		{`COPY (SELECT 1) TO '/tmp/flightgw-copy.csv'`, codes.Unimplemented, "COPY"},
		{`INSTALL httpfs`, codes.Unimplemented, "INSTALL"},
		{`LOAD httpfs`, codes.Unimplemented, "LOAD"},
		{`SET enable_external_access = true`, codes.Unimplemented, "SET"},
	}
	for _, tc := range cases {
		_, err := c.Execute(ctx, tc.q)
		assertStatus(t, err, tc.code, tc.msg)
	}
	for _, q := range []string{`UPDATE t SET id = 1`, `DELETE FROM t`, `DROP TABLE t`, `MERGE INTO t USING t AS s ON true WHEN MATCHED THEN DELETE`} {
		_, err := c.ExecuteUpdate(ctx, q)
		assertStatus(t, err, codes.Unimplemented, strings.Fields(q)[0])
	}

	// A forged ticket (wrong key) and an expired one (right key).
	forged := signedTicket(t, "other-key", time.Now().Add(time.Hour))
	_, err := c.DoGet(ctx, &flight.Ticket{Ticket: forged})
	assertStatus(t, err, codes.Unauthenticated, "signature")
	expired := signedTicket(t, "test-key-123", time.Now().Add(-time.Minute))
	_, err = c.DoGet(ctx, &flight.Ticket{Ticket: expired})
	assertStatus(t, err, codes.Unauthenticated, "expired")
	// The same key, valid: any replica with the key serves it.
	valid := signedTicket(t, "test-key-123", time.Now().Add(time.Hour))
	rdr, err := c.DoGet(ctx, &flight.Ticket{Ticket: valid})
	if err != nil {
		t.Fatalf("valid ticket: %v", err)
	}
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	rdr.Release()
	if n != 1 {
		t.Fatalf("valid ticket returned %d rows", n)
	}
}

// signedTicket builds a query ticket the way a gateway with key does.
func signedTicket(t *testing.T, key string, expires time.Time) []byte {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"id": "q1", "sql": "SELECT count(*) FROM t", "catalog": "lake", "schema": "default",
		"owner": "default/anonymous", "exp": expires.Unix()})
	body := "fgw1." + base64.RawURLEncoding.EncodeToString(payload)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(body))
	tkt, err := flightsql.CreateStatementQueryTicket([]byte(body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))))
	if err != nil {
		t.Fatal(err)
	}
	return tkt
}

func TestQueryRealms(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, realmConfig(t))
	alice, actx := login(t, g, "alice", "alice-pw")
	bob, bctx := login(t, g, "bob", "bob-pw")
	// Alice creates a table in her realm's catalog.
	opts := modeCreate("secret")
	opts.Catalog = ptr("salesdb")
	if _, err := alice.ExecuteIngest(actx, reader(t, people(t, 0, 3)), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Execute(actx, `SELECT count(*) FROM salesdb."default".secret`); err != nil {
		t.Fatalf("alice reads her table: %v", err)
	}
	for _, q := range []string{`SELECT * FROM salesdb."default".secret`, `SELECT * FROM secret`, `SELECT * FROM "default".secret`} {
		_, err := bob.Execute(bctx, q)
		assertStatus(t, err, codes.NotFound, "secret")
	}
}

func ptr[T any](v T) *T { return &v }

func TestQueryCancel(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	info, rdr := startLongRead(t, ctx, c, c, ctx)
	res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("cancel: %v %v", res.GetStatus(), err)
	}
	drainCancelled(t, rdr)
	// The cancelled ticket is refused from then on.
	_, err = c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		r2, _ := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if r2 != nil {
			r2.Next()
			err = r2.Err()
		}
	}
	if status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled ticket: %v", err)
	}
}

// TestQueryStatementTimeout: with timeouts.statement set, GetSqlInfo
// reports it, and a query or an INSERT's source query running longer is
// stopped with DeadlineExceeded, while a quick one still runs.
func TestQueryStatementTimeout(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "timeouts:\n  statement: 400ms\n  txn_idle: 90s\n")
	c, ctx := g.flightClient(t), context.Background()
	vals := sqlInfoValues(collect(t, ctx, c, infoOK(t)(c.GetSqlInfo(ctx, []flightsql.SqlInfo{
		flightsql.SqlInfoFlightSqlServerStatementTimeout, flightsql.SqlInfoFlightSqlServerTransactionTimeout}))))
	if vals[uint32(flightsql.SqlInfoFlightSqlServerStatementTimeout)] != int32(400) ||
		vals[uint32(flightsql.SqlInfoFlightSqlServerTransactionTimeout)] != int32(90000) {
		t.Errorf("sql info timeouts: %v", vals)
	}

	const slow = `SELECT count(*) FROM range(1000000000000) t(i) WHERE i % 7 = 3`
	start := time.Now()
	info, err := c.Execute(ctx, slow)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	assertStatus(t, err, codes.DeadlineExceeded, "statement timeout of 400ms")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the timed-out query took %s", took)
	}

	if _, err := ingest(t, g.adbcConn(t, nil), "people", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	_, err = c.ExecuteUpdate(ctx, `INSERT INTO people SELECT count(*), 'x', 1.5 FROM range(1000000000000) t(i) WHERE i % 7 = 3`)
	assertStatus(t, err, codes.DeadlineExceeded, "INSERT into lake.default.people ran past the statement timeout")
	if _, got := querySchema(t, g.adbcConn(t, nil), `SELECT count(*) FROM people`); len(got) != 1 || got[0] != "10" {
		t.Errorf("rows after the timed-out INSERT: %q", got)
	}
}

// TestQueryConcurrencyLimit: with limits.max_concurrent_queries 1, a
// second query waits while the first streams, fails ResourceExhausted
// naming the limit after limits.query_queue_wait, and runs once the first
// is done.
func TestQueryConcurrencyLimit(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "limits:\n  max_concurrent_queries: 1\n  query_queue_wait: 200ms\n")
	c, ctx := g.flightClient(t), context.Background()
	info, err := c.Execute(ctx, `SELECT i FROM range(100000000) t(i)`)
	if err != nil {
		t.Fatal(err)
	}
	firstCtx, stop := context.WithCancel(ctx)
	defer stop()
	first, err := c.DoGet(firstCtx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Next() {
		t.Fatal(first.Err())
	}
	second, err := c.Execute(ctx, `SELECT 42`)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, second.Endpoint[0].Ticket)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	assertStatus(t, err, codes.ResourceExhausted, "no DoGet slot within 200ms (limits.query_queue_wait): limits.max_concurrent_queries = 1")
	// The slot frees once the first query's call is gone.
	stop()
	first.Release()
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		short, cancel := context.WithTimeout(ctx, time.Second)
		rdr, err := c.DoGet(short, second.Endpoint[0].Ticket)
		if err == nil {
			got, err = renderRows(rdr)
			rdr.Release()
		}
		cancel()
		if err == nil {
			break
		}
	}
	if strings.Join(got, ",") != "42" {
		t.Fatalf("the second query after the first ended: %q", got)
	}
}

func TestPreparedInsertAndSessionOptions(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "pi", adbc.OptionValueIngestModeCreate, people(t, 0, 1)); err != nil {
		t.Fatal(err)
	}
	prep, err := c.Prepare(ctx, `INSERT INTO pi (id, name) VALUES (?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	if ps := prep.ParameterSchema(); ps.NumFields() != 2 || ps.Field(0).Name != "id" {
		t.Fatalf("parameter schema %v", ps)
	}
	rows := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.BinaryTypes.String}}, nil), func(i int) string { return fmt.Sprintf(`{"a": %d, "b": "n%d"}`, 100+i, i) }, 50)
	prep.SetParameters(rows)
	n, err := prep.ExecuteUpdate(ctx)
	if err != nil || n != 50 {
		t.Fatalf("prepared insert: %d %v", n, err)
	}
	if got := int64Column(t, g.readTable(t, "pi"), "id"); len(got) != 51 || got[50] != 149 {
		t.Fatalf("ids after prepared insert: %v", got)
	}
	// Session options set the default catalog and schema.
	opts, err := flight.NewSessionOptionValues(map[string]any{"catalog": "nope"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts})
	if err != nil || len(res.Errors) != 1 {
		t.Fatalf("unknown catalog accepted: %v %v", res, err)
	}
	got, err := c.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
	if err != nil || got.SessionOptions["catalog"].GetStringValue() != "lake" || got.SessionOptions["schema"].GetStringValue() != "default" {
		t.Fatalf("session options: %v %v", got, err)
	}
}

// TestInsertInTransaction: an INSERT inside a transaction is invisible
// until the commit, and a rolled-back one never lands.
func TestInsertInTransaction(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "tx", adbc.OptionValueIngestModeCreate, people(t, 0, 1)); err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := tx.ExecuteUpdate(ctx, `INSERT INTO tx VALUES (7, 'seven', 7.5)`); err != nil || n != 1 {
		t.Fatalf("insert in transaction: %d %v", n, err)
	}
	if got := mustRows(t, cnxn, `SELECT count(*) FROM tx`, nil); got[0] != "1" {
		t.Fatalf("uncommitted insert visible: %q", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustRows(t, cnxn, `SELECT count(*) FROM tx WHERE id = 7`, nil); got[0] != "1" {
		t.Fatalf("committed insert: %q", got)
	}
	tx, err = c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecuteUpdate(ctx, `INSERT INTO tx SELECT id + 100, name, score FROM tx`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := int64Column(t, g.readTable(t, "tx"), "id"); len(got) != 2 {
		t.Fatalf("after rollback: ids %v", got)
	}
}
