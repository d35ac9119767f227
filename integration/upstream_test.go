package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/client"

	_ "github.com/flightgw/flightgw/catalogs/flightsql"
)

// federatedYAML is a gateway with its own embedded Iceberg catalog "lake"
// and a flightsql catalog "up" over the gateway at upAddr.
func federatedYAML(upAddr, extra string) string {
	return fmt.Sprintf(`catalogs:
  - name: lake
    type: iceberg
    properties: {catalog-type: sql, uri: "sqlite:///${DATA}/catalog.db", warehouse: "file://${DATA}/warehouse", create-namespaces: default}
  - name: up
    type: flightsql
    properties:
      uri: grpc://%s
      upstream_catalog: lake
      timeout: 5s
      retries: 2
      breaker_failures: 3
      breaker_open: 1s
%s`, upAddr, extra)
}

// upOpts is an ingest into up."default".table through the federating
// gateway.
func upOpts(table string, create bool) *flightsql.ExecuteIngestOpts {
	o := modeAppend(table)
	if create {
		o = modeCreate(table)
	}
	cat, sch := "up", "default"
	o.Catalog, o.Schema = &cat, &sch
	return o
}

func oneValue(t *testing.T, cnxn adbc.Connection, q string) string {
	t.Helper()
	got := mustRows(t, cnxn, q, nil)
	if len(got) != 1 {
		t.Fatalf("%s: %d rows %q", q, len(got), got)
	}
	return got[0]
}

// TestUpstreamGateway federates one gateway behind another: metadata,
// pushed and scanned queries (with parameters), a join with a local
// Iceberg table, ingest create and append, and transactions whose commit
// is visible upstream and whose rollback is not.
func TestUpstreamGateway(t *testing.T) {
	requireEngine(t)
	up := startGateway(t, "")
	upc := up.adbcConn(t, nil)
	if _, err := ingest(t, upc, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, federatedYAML(up.addr, ""))
	cnxn := gw.adbcConn(t, nil)
	c := gw.flightClient(t)
	ctx := context.Background()

	t.Run("metadata", func(t *testing.T) {
		cat, sch := "up", "default"
		info, err := c.GetTables(ctx, &flightsql.GetTablesOpts{Catalog: &cat, DbSchemaFilterPattern: &sch, IncludeSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		got := readInfo(t, c, info)
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "people") }) {
			t.Fatalf("GetTables of catalog up: %q", got)
		}
		if v := oneValue(t, cnxn, `SELECT count(*) FROM information_schema.columns WHERE table_catalog = 'up' AND table_name = 'people'`); v != "3" {
			t.Fatalf("information_schema columns of up.default.people: %s", v)
		}
	})
	t.Run("queries", func(t *testing.T) {
		if v := oneValue(t, cnxn, `SELECT count(*) FROM up."default".people WHERE id >= 5`); v != "5" {
			t.Fatalf("pushed count: %s", v)
		}
		if !strings.Contains(grepLines(gw.logs.String(), "table=up.default.people"), "pushed=true") {
			t.Fatalf("the count was not pushed to the upstream:\n%s", grepLines(gw.logs.String(), "up"))
		}
		params := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.PrimitiveTypes.Int64}}, nil),
			func(int) string { return `{"p": 3}` }, 1)
		if got := mustRows(t, cnxn, `SELECT name FROM up."default".people WHERE id = ?`, params); !slices.Equal(got, []string{"p3"}) {
			t.Fatalf("query with a parameter: %q", got)
		}
	})
	t.Run("join with a local table", func(t *testing.T) {
		ranks := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "rank", Type: arrow.BinaryTypes.String}}, nil),
			func(i int) string { return fmt.Sprintf(`{"id": %d, "rank": "r%d"}`, i*2, i) }, 3)
		if _, err := ingest(t, cnxn, "ranks", adbc.OptionValueIngestModeCreate, ranks); err != nil {
			t.Fatal(err)
		}
		got := mustRows(t, cnxn, `SELECT p.name, r.rank FROM up."default".people p JOIN lake."default".ranks r ON p.id = r.id ORDER BY p.id`, nil)
		if !slices.Equal(got, []string{"p0|r0", "p2|r1", "p4|r2"}) {
			t.Fatalf("join: %q", got)
		}
	})
	t.Run("ingest", func(t *testing.T) {
		if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 100, 4)), upOpts("people", false)); err != nil || n != 4 {
			t.Fatalf("append through the gateway: %d %v", n, err)
		}
		if v := oneValue(t, upc, `SELECT count(*) FROM people`); v != "14" {
			t.Fatalf("upstream rows after append: %s", v)
		}
		if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), upOpts("fresh", true)); err != nil || n != 3 {
			t.Fatalf("create through the gateway: %d %v", n, err)
		}
		if v := oneValue(t, upc, `SELECT count(*) FROM fresh`); v != "3" {
			t.Fatalf("upstream rows of the created table: %s", v)
		}
		if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), upOpts("fresh", true)); status.Code(err) != codes.AlreadyExists {
			t.Fatalf("create of an existing table: %v", err)
		}
	})
	t.Run("transactions", func(t *testing.T) {
		before := oneValue(t, upc, `SELECT count(*) FROM people`)
		tx, err := c.BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		o := upOpts("people", false)
		o.TransactionId = tx.ID()
		for i := range 2 {
			if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 200+10*i, 5)), o); err != nil {
				t.Fatal(err)
			}
		}
		if v := oneValue(t, upc, `SELECT count(*) FROM people`); v != before {
			t.Fatalf("uncommitted rows visible upstream: %s, was %s", v, before)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if v := oneValue(t, upc, `SELECT count(*) FROM people WHERE id >= 200`); v != "10" {
			t.Fatalf("committed rows upstream: %s", v)
		}
		tx, err = c.BeginTransaction(ctx)
		if err != nil {
			t.Fatal(err)
		}
		o.TransactionId = tx.ID()
		if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 300, 5)), o); err != nil {
			t.Fatal(err)
		}
		// Distributed commit is refused, saying why; the transaction
		// stays open for its rollback.
		if _, err := client.PrepareCommit(ctx, c, string(tx.ID())); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no other process can commit") {
			t.Fatalf("PrepareCommit of an upstream transaction: %v", err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if v := oneValue(t, upc, `SELECT count(*) FROM people WHERE id >= 300`); v != "0" {
			t.Fatalf("rolled-back rows visible upstream: %s", v)
		}
	})
}

// cutProxy forwards loopback TCP to an upstream until cut: then every
// connection through it is closed and new ones are refused, as when the
// upstream's host goes away; restore listens again on the same address.
type cutProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	lis    net.Listener
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target}
	p.listen("127.0.0.1:0")
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) listen(addr string) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.lis, p.addr = lis, lis.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			in, err := lis.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lis != nil {
		p.lis.Close()
		p.lis = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() { p.listen(p.addr) }

// TestUpstreamKilled: an upstream that goes away in the middle of a
// result is a clear Unavailable naming it; repeated failures open the
// breaker, which closes again once the upstream is back.
func TestUpstreamKilled(t *testing.T) {
	requireEngine(t)
	up := startGateway(t, "")
	upc := up.adbcConn(t, nil)
	for i := range 4 {
		mode := adbc.OptionValueIngestModeAppend
		if i == 0 {
			mode = adbc.OptionValueIngestModeCreate
		}
		if _, err := ingest(t, upc, "people", mode, people(t, i*100000, 100000)); err != nil {
			t.Fatal(err)
		}
	}
	px := newCutProxy(t, up.addr)
	gw := startGateway(t, federatedYAML(px.addr, ""))
	c := gw.flightClient(t)
	ctx := context.Background()
	info, err := c.Execute(ctx, `SELECT * FROM up."default".people`)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	got := rdr.RecordBatch().NumRows()
	px.cut()
	for rdr.Next() {
		got += rdr.RecordBatch().NumRows()
	}
	err = rdr.Err()
	rdr.Release()
	if got >= 400000 {
		t.Skipf("the whole result (%d rows) crossed before the cut: nothing to test mid-stream", got)
	}
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), px.addr) {
		t.Fatalf("a result cut after %d rows: %v (want Unavailable naming the upstream %s)", got, err, px.addr)
	}

	// The query is planned from the table's kept schema (schema_ttl) and
	// fails at the plan or at the read, whichever reaches the upstream.
	count := func() error {
		info, err := c.Execute(ctx, `SELECT count(*) FROM up."default".people`)
		if err != nil {
			return err
		}
		r, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return err
		}
		defer r.Release()
		for r.Next() {
		}
		return r.Err()
	}
	var last error
	for range 6 {
		last = count()
		if status.Code(last) != codes.Unavailable || !strings.Contains(last.Error(), px.addr) {
			t.Fatalf("query of a dead upstream: %v (want Unavailable naming %s)", last, px.addr)
		}
	}
	if !strings.Contains(last.Error(), "circuit breaker open") {
		t.Fatalf("after repeated failures the breaker is not open: %v", last)
	}
	px.restore()
	if !eventually(t, 10*time.Second, func() bool { return count() == nil }) {
		t.Fatal("the breaker did not close after the upstream came back")
	}
}

// TestUpstreamCancel: a client that cancels a pushed query at the
// gateway stops the upstream's stream too (it ends Canceled there).
func TestUpstreamCancel(t *testing.T) {
	requireEngine(t)
	up := startGateway(t, "")
	upc := up.adbcConn(t, nil)
	if _, err := ingest(t, upc, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 10000)); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, federatedYAML(up.addr, ""))
	c := gw.flightClient(t)
	ctx := context.Background()
	// 10^8 rows: far more than is read before the cancel.
	info, err := c.Execute(ctx, `SELECT a.id, b.id AS other FROM up."default".people a JOIN up."default".people b ON a.id <> b.id`)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatal(rdr.Err())
	}
	if res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info}); err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("cancel: %v %v", res.GetStatus(), err)
	}
	drainCancelled(t, rdr)
	const upstreamCanceled = "method=/arrow.flight.protocol.FlightService/DoGet code=Canceled"
	if !eventually(t, 10*time.Second, func() bool { return strings.Contains(up.logs.String(), upstreamCanceled) }) {
		t.Fatalf("the upstream's stream was not canceled:\n%s", grepLines(up.logs.String(), "DoGet"))
	}
}

// TestUpstreamReplace: ingest mode replace into an upstream table through
// the federating gateway. Auto-commit, the table then holds the upload's
// rows only. In a transaction, after an append to the table, the replace
// supersedes the append (its discard does not roll the upstream
// transaction back): at COMMIT the table holds the replace's rows and what
// was appended after it, and nothing changes upstream before. A replace
// rolled back leaves the table as it was.
func TestUpstreamReplace(t *testing.T) {
	requireEngine(t)
	up := startGateway(t, "")
	upc := up.adbcConn(t, nil)
	if _, err := ingest(t, upc, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, federatedYAML(up.addr, ""))
	c := gw.flightClient(t)
	ctx := context.Background()
	replace := func(tx []byte) *flightsql.ExecuteIngestOpts {
		o := upOpts("people", false)
		o.TableDefinitionOptions.IfExists = flightsql.TableDefinitionOptionsTableExistsOptionReplace
		o.TransactionId = tx
		return o
	}
	ids := func() string {
		return strings.Join(mustRows(t, upc, `SELECT min(id), max(id), count(*) FROM people`, nil), ",")
	}

	if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 100, 3)), replace(nil)); err != nil || n != 3 {
		t.Fatalf("auto-commit replace: %d %v", n, err)
	}
	if got := ids(); got != "100|102|3" {
		t.Fatalf("upstream after an auto-commit replace: %s, want ids 100..102", got)
	}

	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	app := upOpts("people", false)
	app.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 200, 5)), app); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 300, 2)), replace(tx.ID())); err != nil {
		t.Fatalf("replace in a transaction after an append: %v", err)
	}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 400, 1)), app); err != nil {
		t.Fatalf("append after the replace: %v", err)
	}
	if got := ids(); got != "100|102|3" {
		t.Fatalf("upstream before COMMIT: %s, want it unchanged", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("COMMIT: %v", err)
	}
	if got := ids(); got != "300|400|3" {
		t.Fatalf("upstream after COMMIT: %s, want ids 300, 301, 400", got)
	}

	tx, err = c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 500, 4)), replace(tx.ID())); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ids(); got != "300|400|3" {
		t.Fatalf("upstream after a rolled-back replace: %s, want it unchanged", got)
	}

	// One batch of no rows: arrow-go's client sends nothing for none.
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 0)), replace(nil)); err != nil {
		t.Fatalf("replace with no rows: %v", err)
	}
	if v := oneValue(t, upc, `SELECT count(*) FROM people`); v != "0" {
		t.Fatalf("upstream rows after a replace with no rows: %s", v)
	}
}
