package integration

import (
	"context"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/handlers"
)

// collect reads every batch of a FlightInfo's first endpoint.
func collect(t *testing.T, ctx context.Context, c *flightsql.Client, info *flight.FlightInfo) []arrow.RecordBatch {
	t.Helper()
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		t.Cleanup(b.Release)
		out = append(out, b)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func stringsOf(bs []arrow.RecordBatch, col string) []string {
	var out []string
	for _, b := range bs {
		a := b.Column(b.Schema().FieldIndices(col)[0]).(*array.String)
		for i := range a.Len() {
			out = append(out, a.Value(i))
		}
	}
	return out
}

func TestMetadata(t *testing.T) {
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	for _, name := range []string{"alpha", "beta"} {
		if _, err := ingest(t, cnxn, name, adbc.OptionValueIngestModeCreate, people(t, 0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	c := g.flightClient(t)
	ctx := context.Background()

	if got := stringsOf(collect(t, ctx, c, infoOK(t)(c.GetCatalogs(ctx))), "catalog_name"); len(got) != 1 || got[0] != "lake" {
		t.Fatalf("catalogs = %v", got)
	}
	schemas := collect(t, ctx, c, infoOK(t)(c.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{})))
	if got := stringsOf(schemas, "db_schema_name"); len(got) != 1 || got[0] != "default" {
		t.Fatalf("schemas = %v", got)
	}
	pattern := "a%"
	tables := collect(t, ctx, c, infoOK(t)(c.GetTables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: &pattern, IncludeSchema: true})))
	if got := stringsOf(tables, "table_name"); len(got) != 1 || got[0] != "alpha" {
		t.Fatalf("tables matching a%% = %v", got)
	}
	raw := tables[0].Column(4).(*array.Binary).Value(0)
	sc, err := flight.DeserializeSchema(raw, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if sc.NumFields() != 3 || sc.Field(0).Name != "id" || !arrow.TypeEqual(sc.Field(1).Type, arrow.BinaryTypes.String) {
		t.Fatalf("included schema = %v", sc)
	}
	if got := stringsOf(collect(t, ctx, c, infoOK(t)(c.GetTableTypes(ctx))), "table_type"); len(got) != 1 || got[0] != "TABLE" {
		t.Fatalf("table types = %v", got)
	}
	pk := collect(t, ctx, c, infoOK(t)(c.GetPrimaryKeys(ctx, flightsql.TableRef{Table: "alpha"})))
	if n := countRows(pk); n != 0 {
		t.Fatalf("primary keys = %d rows", n)
	}
	types := collect(t, ctx, c, infoOK(t)(c.GetXdbcTypeInfo(ctx, nil)))
	if n := countRows(types); n < 10 {
		t.Fatalf("xdbc types = %d rows", n)
	}
	bigint := int32(-5)
	if got := stringsOf(collect(t, ctx, c, infoOK(t)(c.GetXdbcTypeInfo(ctx, &bigint))), "type_name"); len(got) != 1 || got[0] != "BIGINT" {
		t.Fatalf("xdbc BIGINT = %v", got)
	}

	info := collect(t, ctx, c, infoOK(t)(c.GetSqlInfo(ctx, []flightsql.SqlInfo{
		flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerReadOnly,
		flightsql.SqlInfoFlightSqlServerTransaction, flightsql.SqlInfoFlightSqlServerBulkIngestion,
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported, handlers.SqlInfoMaxBatchBytes,
	})))
	vals := sqlInfoValues(info)
	want := map[uint32]any{
		uint32(flightsql.SqlInfoFlightSqlServerName):                        "flightgw",
		uint32(flightsql.SqlInfoFlightSqlServerReadOnly):                    false,
		uint32(flightsql.SqlInfoFlightSqlServerTransaction):                 int32(flightsql.SqlTransactionTransaction),
		uint32(flightsql.SqlInfoFlightSqlServerBulkIngestion):               true,
		uint32(flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported): true,
		uint32(handlers.SqlInfoMaxBatchBytes):                               int64(256 << 20),
	}
	for k, v := range want {
		if vals[k] != v {
			t.Errorf("sql info %d = %v, want %v", k, vals[k], v)
		}
	}

	// ADBC's own metadata calls.
	objs, err := cnxn.GetObjects(ctx, adbc.ObjectDepthAll, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer objs.Release()
	if !objs.Next() || objs.RecordBatch().NumRows() != 1 {
		t.Fatal("GetObjects returned no catalog")
	}
	ts, err := cnxn.GetTableSchema(ctx, nil, nil, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if ts.NumFields() != 3 || ts.Field(2).Name != "score" {
		t.Fatalf("GetTableSchema = %v", ts)
	}
}

// infoOK fails the test on a GetFlightInfo error.
func infoOK(t *testing.T) func(*flight.FlightInfo, error) *flight.FlightInfo {
	return func(info *flight.FlightInfo, err error) *flight.FlightInfo {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
}

func countRows(bs []arrow.RecordBatch) int64 {
	var n int64
	for _, b := range bs {
		n += b.NumRows()
	}
	return n
}

// sqlInfoValues maps the ids of a GetSqlInfo result to their scalar
// values (strings, booleans, int32 and int64).
func sqlInfoValues(info []arrow.RecordBatch) map[uint32]any {
	vals := map[uint32]any{}
	for _, b := range info {
		names := b.Column(0).(*array.Uint32)
		u := b.Column(1).(*array.DenseUnion)
		for i := range names.Len() {
			child := u.Field(u.ChildID(i))
			off := int(u.ValueOffset(i))
			switch a := child.(type) {
			case *array.String:
				vals[names.Value(i)] = a.Value(off)
			case *array.Boolean:
				vals[names.Value(i)] = a.Value(off)
			case *array.Int64:
				vals[names.Value(i)] = a.Value(off)
			case *array.Int32:
				vals[names.Value(i)] = a.Value(off)
			}
		}
	}
	return vals
}
