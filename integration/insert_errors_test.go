package integration

import (
	"context"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
)

// TestInsertErrorsNameTableAndColumn: an INSERT's errors are in the
// user's terms, naming the table and the column, never the gateway's
// wrapping of the statement (the harness checks every message for "__").
func TestInsertErrorsNameTableAndColumn(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 2)); err != nil {
		t.Fatal(err)
	}
	c := g.flightClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		q    string
		code codes.Code
		want string
	}{
		{`INSERT INTO people VALUES ('notanint', 'x', 1.5)`, codes.InvalidArgument,
			"INSERT into lake.default.people: column id (BIGINT): could not convert 'notanint'"},
		{`INSERT INTO people VALUES (1)`, codes.InvalidArgument, "INSERT has 1 value for 3 columns of lake.default.people"},
		{`INSERT INTO people (id, name) VALUES (1, 'a', 3)`, codes.InvalidArgument, "INSERT has 3 values for 2 columns of lake.default.people"},
		{`INSERT INTO people (id) VALUES (99999999999999999999999)`, codes.InvalidArgument,
			"column id (BIGINT): value 99999999999999999999999 is out of range"},
		{`INSERT INTO people (score) VALUES ('x')`, codes.InvalidArgument, "column score (DOUBLE): could not convert 'x'"},
		{`INSERT INTO default.people (id) SELECT name FROM default.people`, codes.InvalidArgument, "column id (BIGINT): could not convert 'p0'"},
		{`INSERT INTO people (id) VALUES (1), ('y')`, codes.InvalidArgument, "INSERT into lake.default.people: Conversion Error"},
		{`INSERT INTO people (id) VALUES (nope)`, codes.InvalidArgument, `INSERT into lake.default.people: Binder Error: Referenced column "nope"`},
		{`INSERT INTO people (id) SELECT x FROM nope`, codes.NotFound, "table nope not found"},
	} {
		_, err := c.ExecuteUpdate(ctx, tc.q)
		t.Run(tc.q, func(t *testing.T) { assertStatus(t, err, tc.code, tc.want) })
	}
	// Prepared: the cast is described when the statement is prepared.
	_, err := c.Prepare(ctx, `INSERT INTO people VALUES (1)`)
	assertStatus(t, err, codes.InvalidArgument, "INSERT has 1 value for 3 columns of lake.default.people")
	prep, err := c.Prepare(ctx, `INSERT INTO people (id) VALUES ('x')`)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	_, err = prep.ExecuteUpdate(ctx)
	assertStatus(t, err, codes.InvalidArgument, "INSERT into lake.default.people: column id (BIGINT): could not convert 'x'")
}
