package integration

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
)

// TestQuerySplitEndpoints: a query that filters and projects a table of
// several files gets one endpoint per file (engine.max_endpoints bounds
// them); ADBC reads them all and gets the query's rows; every endpoint
// reads the snapshot of the FlightInfo, not a later commit; an aggregate
// keeps one endpoint; cancelling the FlightInfo refuses every endpoint.
func TestQuerySplitEndpoints(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "engine:\n  max_endpoints: 3\n  split_min_bytes: 1\n")
	cnxn := g.adbcConn(t, nil)
	for i := range 4 {
		if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreateAppend, people(t, i*100, 100)); err != nil {
			t.Fatal(err)
		}
	}
	c, ctx := g.flightClient(t), context.Background()
	const q = `SELECT id, name FROM people WHERE id % 3 = 0`
	info, err := c.Execute(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 3 {
		t.Fatalf("%d endpoints for 4 files and max_endpoints 3, want 3", len(info.Endpoint))
	}
	// A commit after the FlightInfo: the endpoints still read the
	// snapshot it was planned at.
	if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeAppend, people(t, 400, 100)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rows := range readEndpoints(t, c, info) {
		if len(rows) == 0 {
			t.Error("an endpoint read no rows")
		}
		got = append(got, rows...)
	}
	var want []string
	for id := 0; id < 400; id += 3 {
		want = append(want, strings.Join([]string{itoa(id), "p" + itoa(id)}, "|"))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("endpoints read %d rows, want the %d rows of the planned snapshot", len(got), len(want))
	}

	// ADBC reads every endpoint (in parallel) of the current table.
	_, rows := querySchema(t, cnxn, q)
	if len(rows) != 167 {
		t.Errorf("ADBC read %d rows, want 167", len(rows))
	}
	// A prepared query with a bound parameter is split the same way.
	prep, err := c.Prepare(ctx, `SELECT id FROM people WHERE id >= ?`)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	param := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "$1", Type: arrow.PrimitiveTypes.Int64}}, nil),
		func(int) string { return `{"$1": 450}` }, 1)
	defer param.Release()
	prep.SetParameters(param)
	pinfo, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pinfo.Endpoint) != 3 {
		t.Errorf("prepared query: %d endpoints, want 3", len(pinfo.Endpoint))
	}
	var n int
	for _, rows := range readEndpoints(t, c, pinfo) {
		n += len(rows)
	}
	if n != 50 {
		t.Errorf("prepared query read %d rows over its endpoints, want 50", n)
	}

	// Not split: an aggregate, a sort, a limit.
	for _, q := range []string{`SELECT count(*) FROM people`, `SELECT id FROM people ORDER BY id`, `SELECT id FROM people LIMIT 5`} {
		info, err := c.Execute(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Endpoint) != 1 {
			t.Errorf("%s: %d endpoints, want 1", q, len(info.Endpoint))
		}
	}

	// Cancelling the FlightInfo refuses every endpoint.
	info, err = c.Execute(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info}); err != nil || res.Status != flight.CancelStatusCancelled {
		t.Fatalf("cancel: %v %v", res.Status, err)
	}
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err == nil {
			_, err = renderRows(rdr)
			rdr.Release()
		}
		assertStatus(t, err, codes.Canceled, "cancelled")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// readEndpoints reads each endpoint of info in turn and returns its rows
// rendered as "a|b".
func readEndpoints(t *testing.T, c *flightsql.Client, info *flight.FlightInfo) [][]string {
	t.Helper()
	var out [][]string
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(context.Background(), ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := renderRows(rdr)
		rdr.Release()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows)
	}
	return out
}
