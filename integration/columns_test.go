package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestColumnMetadata: every schema a query's columns are described in
// (GetFlightInfo, GetSchema, the DoGet stream, a prepared statement's
// dataset and parameters) carries the Flight SQL column metadata: the
// table of a column traced to one, and the type's name, precision and
// scale for every column, a computed decimal's included.
func TestColumnMetadata(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "d10", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"k":1,"d10":"1.25","s":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if _, err := ingest(t, g.adbcConn(t, nil), "cm", adbc.OptionValueIngestModeCreate, rec); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT c.d10 AS price, k, sum(d10) AS total, k + 1 AS k1 FROM cm AS c WHERE s = ? GROUP BY ALL`
	want := []string{
		"price:DECIMAL(10,2) lake.default.cm ro=0",
		"k:BIGINT(19,0) lake.default.cm ro=0",
		"total:DECIMAL(38,2) - ro=1",
		"k1:BIGINT(19,0) - ro=1",
	}
	wantParams := []string{"$1:VARCHAR(2147483647,0) - ro=1"}
	cl := g.flightClient(t)
	check := func(what string, s *arrow.Schema, want []string) {
		t.Helper()
		if got := describeColumns(s); strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("%s:\n got %q\nwant %q", what, got, want)
		}
	}

	prep, err := cl.Prepare(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	check("prepared dataset", prep.DatasetSchema(), want)
	check("prepared parameters", prep.ParameterSchema(), wantParams)
	sr, err := prep.GetSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("prepared GetSchema", schemaOf(t, sr.GetSchema()), want)
	params, _, err := array.RecordFromJSON(memory.DefaultAllocator, prep.ParameterSchema(), strings.NewReader(`[{"$1":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer params.Release()
	prep.SetParameters(params)
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("prepared FlightInfo", schemaOf(t, info.Schema), want)
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	check("prepared DoGet stream", rdr.Schema(), want)
	n := 0
	for rdr.Next() {
		n += int(rdr.RecordBatch().NumRows())
	}
	if rdr.Err() != nil || n != 1 {
		t.Fatalf("prepared DoGet: %d rows, %v", n, rdr.Err())
	}
	rdr.Release()

	// Without parameters, as a statement.
	q2 := strings.Replace(q, "s = ?", "s = 'a'", 1)
	info, err = cl.Execute(ctx, q2)
	if err != nil {
		t.Fatal(err)
	}
	check("statement FlightInfo", schemaOf(t, info.Schema), want)
	sr, err = cl.GetExecuteSchema(ctx, q2)
	if err != nil {
		t.Fatal(err)
	}
	check("statement GetSchema", schemaOf(t, sr.GetSchema()), want)
	rdr, err = cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	check("statement DoGet stream", rdr.Schema(), want)
	for rdr.Next() {
		if !rdr.RecordBatch().Schema().Equal(rdr.Schema()) {
			t.Errorf("a batch's schema differs from the stream's")
		}
	}
	if rdr.Err() != nil {
		t.Fatal(rdr.Err())
	}

	// A prepared INSERT's parameters are the target columns.
	ins, err := cl.Prepare(ctx, "INSERT INTO cm (k, s) VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close(ctx)
	check("INSERT parameters", ins.ParameterSchema(), []string{"k:BIGINT(19,0) lake.default.cm ro=0", "s:VARCHAR(2147483647,0) lake.default.cm ro=0"})
}

func schemaOf(t *testing.T, b []byte) *arrow.Schema {
	t.Helper()
	s, err := flight.DeserializeSchema(b, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// describeColumns renders each field's Flight SQL column metadata as
// "name:TYPE(precision,scale) catalog.schema.table ro=bool".
func describeColumns(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		md := flightsql.ColumnMetadata{Data: &f.Metadata}
		get := func(key string) string {
			if i := f.Metadata.FindKey(key); i >= 0 {
				return f.Metadata.Values()[i]
			}
			return "?"
		}
		table := "-"
		if name, ok := md.TableName(); ok {
			cat, _ := md.CatalogName()
			sch, _ := md.SchemaName()
			table = cat + "." + sch + "." + name
		}
		typ, _ := md.TypeName()
		out = append(out, f.Name+":"+typ+"("+get(flightsql.PrecisionKey)+","+get(flightsql.ScaleKey)+") "+table+
			" ro="+get(flightsql.IsReadOnlyKey))
	}
	return out
}
