package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"

	_ "github.com/flightgw/flightgw/catalogs/paimon"
)

// TestPaimonReadsOwnTransaction: inside an ADBC transaction (autocommit
// off), a query over a Paimon append table reads the committed rows and
// the transaction's staged ones from their Parquet files (a Plain plan of
// PlanStaged: DuckDB's reader is given the warehouse), only the staged
// ones after a replace; another connection reads only the committed
// rows; after rollback the staged rows are gone. A primary-key table's
// staged rows need the merge on read, which the file plan cannot give:
// the query reads them through the backend's ScanStaged, merged with the
// committed rows by key.
func TestPaimonReadsOwnTransaction(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`)
	ctx := context.Background()
	other := g.adbcConn(t, nil)
	if _, err := ingest(t, other, "app", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	cnxn := g.adbcConn(t, nil)
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT count(*), min(id), max(id) FROM pm.default.app`

	if _, err := ingest(t, cnxn, "app", adbc.OptionValueIngestModeAppend, people(t, 100, 5)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, q); got != "15|0|104" {
		t.Errorf("in the transaction: %s, want the 10 committed and 5 staged rows", got)
	}
	if !readsFiles(t, g, cnxn, "pm.default.app") {
		t.Error("the transaction's query is not read from the table's files")
	}
	if got := joined(t, other, q); got != "10|0|9" {
		t.Errorf("another connection during the transaction: %s", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, q); got != "10|0|9" {
		t.Errorf("after rollback: %s, want the committed rows only", got)
	}

	// A replace in the transaction: only its rows, until it rolls back.
	if _, err := ingest(t, cnxn, "app", adbc.OptionValueIngestModeReplace, people(t, 500, 3)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, q); got != "3|500|502" {
		t.Errorf("after a replace in the transaction: %s", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, other, q); got != "10|0|9" {
		t.Errorf("after the replace rolled back: %s", got)
	}

	// A primary-key table: its staged rows are merged on read with the
	// committed ones (the stream path, ScanStaged), keys 5-9 updated.
	c := g.flightClient(t)
	pk := modeCreate("pk")
	pk.Catalog, pk.Options = ptr("pm"), map[string]string{"bucket": "2", "primary-key": "id"}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 10)), pk); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, cnxn, "pk", adbc.OptionValueIngestModeAppend, people(t, 5, 10)); err != nil {
		t.Fatal(err)
	}
	// Committed ids 0-9 score id+0.5; staged ids 5-14 score id-4.5.
	const pq = `SELECT count(*), min(id), max(id), sum(score), max(score) FILTER (WHERE id = 7) FROM pm.default.pk`
	if got := joined(t, cnxn, pq); got != "15|0|14|62.5|2.5" {
		t.Errorf("primary-key table in the transaction: %s, want 15 merged rows, keys 5-9 updated", got)
	}
	if got := joined(t, other, pq); got != "10|0|9|50|7.5" {
		t.Errorf("primary-key table from another connection during the transaction: %s", got)
	}
	// With a staged append table in the same query, both on the stream
	// path.
	if _, err := ingest(t, cnxn, "app", adbc.OptionValueIngestModeAppend, people(t, 100, 5)); err != nil {
		t.Fatal(err)
	}
	const both = `SELECT (SELECT count(*) FROM pm.default.app), (SELECT count(*) FROM pm.default.pk)`
	if got := joined(t, cnxn, both); got != "15|15" {
		t.Errorf("both tables in the transaction: %s", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, pq); got != "10|0|9|50|7.5" {
		t.Errorf("primary-key table after rollback: %s, want the committed rows only", got)
	}

	// A table created in the transaction (a staged create): its rows are
	// the transaction's alone (CreateScanner), no other connection finds
	// it before COMMIT, and it is gone once the transaction rolls back.
	if _, err := ingest(t, cnxn, "fresh", adbc.OptionValueIngestModeCreate, people(t, 0, 7)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*), max(id) FROM pm.default.fresh`); got != "7|6" {
		t.Errorf("a table created in the transaction: %s, want its 7 rows", got)
	}
	if rows, err := queryRows(t, other, `SELECT count(*) FROM pm.default.fresh`, nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("another connection: %v, %v; want the table not found until COMMIT", rows, err)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if rows, err := queryRows(t, cnxn, `SELECT count(*) FROM pm.default.fresh`, nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("after rollback: %v, %v; want the table not found", rows, err)
	}
}
