package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
)

// TestNamesIgnoreCase: catalog, schema and table names resolve as
// GetSqlInfo declares identifiers, case-insensitively, an exact-case
// match first; two tables equal ignoring case are refused by a name that
// is neither, naming both.
func TestNamesIgnoreCase(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	for name, n := range map[string]int{"lower": 1, "Mixed": 2, "dup": 3, "DUP": 4} {
		if _, err := ingest(t, cnxn, name, adbc.OptionValueIngestModeCreate, people(t, 0, n)); err != nil {
			t.Fatalf("ingest %s: %v", name, err)
		}
	}
	for q, want := range map[string]string{
		`SELECT count(*) FROM LOWER`:                                 "1",
		`SELECT count(*) FROM "LOWER"`:                               "1",
		`SELECT count(*) FROM LAKE.DEFAULT.Lower`:                    "1",
		`SELECT count(*) FROM "Lake"."Default"."lower"`:              "1",
		`SELECT count(*) FROM mixed`:                                 "2",
		`SELECT count(*) FROM "MIXED" m JOIN LOWER l ON m.id = l.id`: "1",
		`SELECT count(*) FROM dup`:                                   "3",
		`SELECT count(*) FROM "DUP"`:                                 "4",
	} {
		got, err := queryRows(t, cnxn, q, nil)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%s: %v, %v; want %s", q, got, err, want)
		}
	}
	c := g.flightClient(t)
	_, err := c.Execute(context.Background(), `SELECT count(*) FROM Dup`)
	assertStatus(t, err, codes.InvalidArgument, "table default.Dup is ambiguous: it matches default.DUP, default.dup")
	// Each name the message offers works pasted back as written
	// (default is a reserved word in DuckDB).
	msg := err.Error()
	for name, want := range map[string]string{"default.DUP": "4", "default.dup": "3"} {
		if !strings.Contains(msg, name) {
			t.Fatalf("%q does not offer %s", msg, name)
		}
		got, err := queryRows(t, cnxn, "SELECT count(*) FROM "+name, nil)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%s pasted back: %v, %v; want %s", name, got, err, want)
		}
	}
	_, err = c.Execute(context.Background(), `SELECT count(*) FROM no_such`)
	assertStatus(t, err, codes.NotFound, "no_such")
	if n, err := execUpdate(t, cnxn, `INSERT INTO LAKE."DEFAULT".MIXED (id, name, score) VALUES (7, 'x', 1.5)`); err != nil || n != 1 {
		t.Fatalf("INSERT into MIXED: %d, %v", n, err)
	}
	if got := rows(g.readTable(t, "Mixed")); got != 3 {
		t.Errorf("Mixed has %d rows after the INSERT, want 3", got)
	}
}
