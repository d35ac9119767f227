package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
)

// joined runs q through ADBC and returns its rows ("a|b") joined by
// commas.
func joined(t *testing.T, cnxn adbc.Connection, q string) string {
	t.Helper()
	_, rows := querySchema(t, cnxn, q)
	return strings.Join(rows, ",")
}

// TestQueryReadsOwnTransaction: a query inside an open transaction (ADBC
// with autocommit off) reads what the transaction staged, appended or
// replaced, with the committed data; another connection reads only the
// committed data; INSERT ... SELECT in the transaction reads it too; after
// commit or rollback everyone reads the table as it then is.
func TestQueryReadsOwnTransaction(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	ctx := context.Background()
	other := g.adbcConn(t, nil)
	cnxn := g.adbcConn(t, nil)
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}

	// A table created in the transaction: its rows are the transaction's.
	if _, err := ingest(t, cnxn, "rw", adbc.OptionValueIngestModeCreate, people(t, 0, 100)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*), sum(id) FROM rw`); got != "100|4950" {
		t.Errorf("in the transaction: %s", got)
	}
	// The transaction creates the table (a staged create): another
	// connection finds none until COMMIT.
	if rows, err := queryRows(t, other, `SELECT count(*) FROM rw`, nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("another connection: %v, %v; want the table not found", rows, err)
	}
	if _, err := ingest(t, cnxn, "rw", adbc.OptionValueIngestModeAppend, people(t, 100, 50)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*), max(id) FROM rw WHERE id % 2 = 0`); got != "75|148" {
		t.Errorf("after a second append in the transaction: %s", got)
	}
	// INSERT ... SELECT in the transaction reads the staged rows.
	if _, err := ingest(t, cnxn, "rw_copy", adbc.OptionValueIngestModeCreate, people(t, 1000, 1)); err != nil {
		t.Fatal(err)
	}
	if n, err := execUpdate(t, cnxn, `INSERT INTO rw_copy SELECT * FROM rw WHERE id < 10`); err != nil || n != 10 {
		t.Fatalf("INSERT ... SELECT in the transaction: %d %v", n, err)
	}
	if got := joined(t, cnxn, `SELECT count(*) FROM rw_copy`); got != "11" {
		t.Errorf("rw_copy in the transaction: %s", got)
	}
	// A statement prepared in the transaction reads its rows, and after
	// the commit it runs in the connection's next transaction.
	prep, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close()
	if err := prep.SetSqlQuery(`SELECT count(*) FROM rw`); err != nil {
		t.Fatal(err)
	}
	if err := prep.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	runPrepared := func() string {
		t.Helper()
		rdr, _, err := prep.ExecuteQuery(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		rows, err := renderRows(rdr)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(rows, ",")
	}
	if got := runPrepared(); got != "150" {
		t.Errorf("prepared in the transaction: %s", got)
	}
	if err := cnxn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, cnxn, "rw", adbc.OptionValueIngestModeAppend, people(t, 150, 5)); err != nil {
		t.Fatal(err)
	}
	if got := runPrepared(); got != "155" {
		t.Errorf("prepared statement in the next transaction: %s", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []adbc.Connection{cnxn, other} {
		if got := joined(t, c, `SELECT (SELECT count(*) FROM rw), (SELECT count(*) FROM rw_copy)`); got != "150|11" {
			t.Errorf("after commit: %s", got)
		}
	}

	// A replace in a transaction: the transaction reads only its rows
	// until it rolls back.
	if _, err := ingest(t, cnxn, "rw", adbc.OptionValueIngestModeReplace, people(t, 500, 3)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*), min(id) FROM rw`); got != "3|500" {
		t.Errorf("after a replace in the transaction: %s", got)
	}
	if got := joined(t, other, `SELECT count(*) FROM rw`); got != "150" {
		t.Errorf("another connection during the replace: %s", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*) FROM rw`); got != "150" {
		t.Errorf("after rollback: %s", got)
	}

	// A table whose files the engine cannot read natively with the staged
	// ones (its schema evolved) is read through the backend's ScanStaged,
	// the staged row's new column with it.
	g.evolve(t, "rw")
	evolved := arrow.NewSchema(append(peopleSchema.Fields(), arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	row := batchFromJSON(t, evolved, func(int) string { return `{"id": 900, "name": "p900", "score": 1.5, "extra": "x"}` }, 1)
	defer row.Release()
	if _, err := ingest(t, cnxn, "rw", adbc.OptionValueIngestModeAppend, row); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*), count(extra), max(id) FROM rw`); got != "151|1|900" {
		t.Errorf("an evolved table in the transaction: %s, want the 150 committed rows and the staged one", got)
	}
	if readsFiles(t, g, cnxn, "rw") {
		t.Error("an evolved table with staged writes is read natively")
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// A replace that changes the schema reads as the table only once its
	// commit has changed the schema: the query is refused, not answered
	// without the transaction's rows.
	narrow := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	nrow := batchFromJSON(t, narrow, func(int) string { return `{"id": 7, "tag": "t"}` }, 1)
	defer nrow.Release()
	if _, err := ingest(t, cnxn, "rw", adbc.OptionValueIngestModeReplace, nrow); err != nil {
		t.Fatal(err)
	}
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	_ = stmt.SetSqlQuery(`SELECT count(*) FROM rw`)
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	// ADBC reports FailedPrecondition as StatusUnknown, naming the code.
	assertADBC(t, err, adbc.StatusUnknown, "a replace that changes the schema")
	assertADBC(t, err, adbc.StatusUnknown, codes.FailedPrecondition.String())
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
}
