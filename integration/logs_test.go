package integration

import (
	"context"
	"regexp"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestLogLinesNameTheTable: every finished ingest and commit logs one
// info line with what it wrote and the snapshot; a failed ingest names the
// table as resolved, not the command's empty catalog and schema.
func TestLogLinesNameTheTable(t *testing.T) {
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 3)); err != nil {
		t.Fatal(err)
	}
	_, _ = ingest(t, cnxn, "people", adbc.OptionValueIngestModeCreate, people(t, 0, 3)) // exists
	c := g.flightClient(t)
	ctx := context.Background()
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := modeAppend("people")
	o.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 2)), o); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	logs := g.logs.String()
	for _, want := range []string{
		`level=INFO msg="ingest finished" table=lake.default.people rows=3 bytes=[1-9][0-9]* duration=\S+ snapshot=[0-9]+`,
		`level=INFO msg="ingest failed" table=lake.default.people rows=0 code=AlreadyExists`,
		`level=INFO msg="ingest finished" table=lake.default.people rows=2 bytes=[1-9][0-9]* duration=\S+ staged="in a transaction"`,
		`level=INFO msg="transaction committed" txn=\S+ tables=1 rows=2 bytes=[1-9][0-9]* duration=\S+ snapshots=lake.default.people@[0-9]+`,
	} {
		if !regexp.MustCompile(want).MatchString(logs) {
			t.Errorf("no log line matches %s:\n%s", want, logs)
		}
	}
}
