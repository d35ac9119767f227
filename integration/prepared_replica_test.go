package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
)

// readInfo reads every endpoint of info through c: the rows, rendered.
func readInfo(t *testing.T, c *flightsql.Client, info *flight.FlightInfo) []string {
	t.Helper()
	return slices.Concat(readEndpoints(t, c, info)...)
}

func idParam(t *testing.T, id int) arrow.RecordBatch {
	t.Helper()
	rec := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "$1", Type: arrow.PrimitiveTypes.Int64}}, nil),
		func(int) string { return fmt.Sprintf(`{"$1": %d}`, id) }, 1)
	t.Cleanup(rec.Release)
	return rec
}

// TestPreparedAcrossReplicas: two gateways sharing tickets.signing_key,
// each with its own data dir and the same table, behind a load balancer
// that spreads calls per RPC. A statement prepared and bound on one runs
// on the other from its handle; a gateway with another key refuses it.
func TestPreparedAcrossReplicas(t *testing.T) {
	requireEngine(t)
	const shared = "tickets: {signing_key: replica-key-1}\n"
	g1, g2 := startGateway(t, shared), startGateway(t, shared)
	g3 := startGateway(t, "tickets: {signing_key: another-key}\n")
	for _, g := range []*gateway{g1, g2, g3} {
		if _, err := ingest(t, g.adbcConn(t, nil), "people", adbc.OptionValueIngestModeCreate, people(t, 0, 100)); err != nil {
			t.Fatal(err)
		}
	}
	c1, c2, c3 := g1.flightClient(t), g2.flightClient(t), g3.flightClient(t)
	ctx := context.Background()
	const q = `SELECT count(*) FROM people WHERE id >= ?`

	prep, err := c1.Prepare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	created := prep.Handle()
	if !strings.HasPrefix(string(created), "fgwp1.") {
		t.Fatalf("handle %q", created)
	}
	// Bind on replica 1: the client keeps the handle DoPut returns.
	prep.SetParameters(idParam(t, 40))
	if err := prep.ExecutePut(ctx); err != nil {
		t.Fatal(err)
	}
	bound := prep.Handle()
	if string(bound) == string(created) {
		t.Fatal("binding returned the same handle")
	}
	// Execute on replica 2, which never saw the statement: 60 rows have
	// id >= 40.
	info, err := flightsql.NewPreparedStatement(c2, bound).Execute(ctx)
	if err != nil {
		t.Fatalf("replica 2: %v", err)
	}
	if got := readInfo(t, c2, info); len(got) != 1 || got[0] != "60" {
		t.Fatalf("replica 2 counted %v, want 60", got)
	}
	if !strings.Contains(g2.logs.String(), "prepared statement rebuilt from its handle") {
		t.Error("replica 2 did not rebuild the statement from its handle")
	}
	// The same, with the command built by hand (DoGet of the command).
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD,
		Cmd: mustAny(t, &pb.CommandPreparedStatementQuery{PreparedStatementHandle: bound})}
	info, err = c2.Client.GetFlightInfo(ctx, desc)
	if err != nil {
		t.Fatal(err)
	}
	if got := readInfo(t, c2, info); len(got) != 1 || got[0] != "60" {
		t.Fatalf("replica 2 (raw command) counted %v, want 60", got)
	}

	// Rebinding on replica 2 and executing on replica 1: the newer binding
	// the handle carries wins over the one replica 1 holds.
	p2 := flightsql.NewPreparedStatement(c2, bound)
	p2.SetParameters(idParam(t, 90))
	if err := p2.ExecutePut(ctx); err != nil {
		t.Fatal(err)
	}
	info, err = flightsql.NewPreparedStatement(c1, p2.Handle()).Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := readInfo(t, c1, info); len(got) != 1 || got[0] != "10" {
		t.Fatalf("replica 1 with the handle bound on replica 2 counted %v, want 10", got)
	}
	// A client that ignores the handle a binding returns still works on
	// the replica it bound on: its binding is kept there.
	info, err = flightsql.NewPreparedStatement(c1, created).Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := readInfo(t, c1, info); len(got) != 1 || got[0] != "60" {
		t.Fatalf("replica 1 with the created handle counted %v, want 60 (bound there)", got)
	}

	// JDBC 18.3.0 binds with the created handle every time and runs the
	// handle each binding returns: bound on replica 2 after replica 1 kept
	// a binding of the created handle, replica 1 runs replica 2's.
	pj := flightsql.NewPreparedStatement(c2, created)
	pj.SetParameters(idParam(t, 75))
	if err := pj.ExecutePut(ctx); err != nil {
		t.Fatal(err)
	}
	info, err = flightsql.NewPreparedStatement(c1, pj.Handle()).Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := readInfo(t, c1, info); len(got) != 1 || got[0] != "25" {
		t.Fatalf("replica 1 with a binding of the created handle made on replica 2 counted %v, want 25", got)
	}

	// Another signing key: refused.
	_, err = flightsql.NewPreparedStatement(c3, bound).Execute(ctx)
	assertStatus(t, err, codes.Unauthenticated, "signature")
	// A query ticket is not a handle.
	tkt, err := flightsql.GetStatementQueryTicket(info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	_, err = flightsql.NewPreparedStatement(c2, tkt.GetStatementHandle()).Execute(ctx)
	assertStatus(t, err, codes.InvalidArgument, "a query ticket is not a prepared statement handle")

	// Closed on replica 1, the handle stays usable by its owner.
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	info, err = flightsql.NewPreparedStatement(c1, bound).Execute(ctx)
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	if got := readInfo(t, c1, info); len(got) != 1 || got[0] != "60" {
		t.Fatalf("after close counted %v, want 60", got)
	}

	// An INSERT prepared on replica 1 runs on replica 2 with two batches of
	// parameters.
	ins, err := c1.Prepare(ctx, `INSERT INTO people (id, name) VALUES (?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close(ctx)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	b1 := batchFromJSON(t, schema, func(i int) string { return fmt.Sprintf(`{"id": %d, "name": "r%d"}`, 1000+i, i) }, 3)
	b2 := batchFromJSON(t, schema, func(i int) string { return fmt.Sprintf(`{"id": %d, "name": "s%d"}`, 2000+i, i) }, 2)
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{b1, b2})
	if err != nil {
		t.Fatal(err)
	}
	pi := flightsql.NewPreparedStatement(c2, ins.Handle())
	pi.SetRecordReader(rr)
	n, err := pi.ExecuteUpdate(ctx)
	if err != nil || n != 5 {
		t.Fatalf("prepared INSERT on replica 2: %d %v", n, err)
	}
	if got := int64Column(t, g2.readTable(t, "people"), "id"); len(got) != 105 {
		t.Errorf("replica 2 has %d rows after the INSERT, want 105", len(got))
	}
	if got := int64Column(t, g1.readTable(t, "people"), "id"); len(got) != 100 {
		t.Errorf("replica 1 has %d rows, want 100 (the INSERT ran on replica 2)", len(got))
	}
}

// TestPreparedHandleADBC: ADBC Go (arrow-go's Flight SQL client) executes
// a bound statement with the handle its binding returned.
func TestPreparedHandleADBC(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 100)); err != nil {
		t.Fatal(err)
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(`SELECT count(*) FROM people WHERE id >= ?`); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, want int }{{40, 60}, {95, 5}} {
		if err := stmt.Bind(context.Background(), idParam(t, tc.id)); err != nil {
			t.Fatal(err)
		}
		rdr, _, err := stmt.ExecuteQuery(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, err := renderRows(rdr)
		rdr.Release()
		if err != nil || len(got) != 1 || got[0] != fmt.Sprint(tc.want) {
			t.Fatalf("id >= %d: %v %v, want %d", tc.id, got, err, tc.want)
		}
	}
	logs := g.logs.String()
	t.Log(grepLines(logs, "prepared statement"))
	if !strings.Contains(logs, "from=handle") || strings.Contains(logs, "from=local") {
		t.Errorf("ADBC did not execute with the handles its bindings returned:\n%s", grepLines(logs, "prepared statement"))
	}
	// It binds the second time with the handle the first binding returned.
	if n := strings.Count(grepLines(logs, `msg="prepared statement bound"`), `handle_bind=""`); n != 1 {
		t.Errorf("ADBC bound with the created handle %d times, want once:\n%s", n, grepLines(logs, "prepared statement"))
	}
}
