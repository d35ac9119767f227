package integration

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// startIcebergS3 runs a gateway whose default catalog "ice" is an Iceberg
// SQL catalog (SQLite) with its warehouse on an in-process S3 server
// (gofakes3 on memory, as integration/s3server serves it).
func startIcebergS3(t *testing.T) *gateway {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithAutoBucket(false)).Server())
	t.Cleanup(srv.Close)
	return startGateway(t, strings.ReplaceAll(`
catalogs:
  - name: ice
    type: iceberg
    properties:
      catalog-type: sql
      uri: "sqlite://${DATA}/catalog.db"
      warehouse: "s3://lake/wh"
      create-namespaces: default
      s3.endpoint: "${S3}"
      s3.region: us-east-1
      s3.access-key-id: test
      s3.secret-access-key: test-secret
      s3.force-virtual-addressing: "false"
default_catalog: ice
`, "${S3}", srv.URL))
}

// TestIcebergS3ReadsOwnTransaction: inside an ADBC transaction (autocommit
// off), a query over an Iceberg table on S3, which the engine cannot read
// from local files, reads the committed rows and the transaction's staged
// ones through the backend's ScanStaged (filters applied to both), only
// the staged ones after a replace; another connection reads only the
// committed rows; after rollback the staged rows are gone.
func TestIcebergS3ReadsOwnTransaction(t *testing.T) {
	requireEngine(t)
	g := startIcebergS3(t)
	ctx := context.Background()
	other := g.adbcConn(t, nil)
	if _, err := ingest(t, other, "app", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil {
		t.Fatal(err)
	}
	cnxn := g.adbcConn(t, nil)
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT count(*), min(id), max(id) FROM ice.default.app`

	if _, err := ingest(t, cnxn, "app", adbc.OptionValueIngestModeAppend, people(t, 100, 5)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, q); got != "15|0|104" {
		t.Errorf("in the transaction: %s, want the 10 committed and 5 staged rows", got)
	}
	if readsFiles(t, g, cnxn, "ice.default.app") {
		t.Error("a table on S3 is read natively")
	}
	if got := joined(t, cnxn, `SELECT count(*), sum(id) FROM ice.default.app WHERE id >= 5 AND id < 103`); got != "8|338" {
		t.Errorf("filtered in the transaction: %s, want ids 5-9 and 100-102", got)
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
	if got := joined(t, other, q); got != "10|0|9" {
		t.Errorf("another connection during the replace: %s", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, other, q); got != "10|0|9" {
		t.Errorf("after the replace rolled back: %s", got)
	}

	// A partitioned table: the staged files carry their partition values,
	// and a filter on the partition column reads the matching rows of
	// both the committed and the staged files.
	part := modeCreate("parted")
	part.Options = map[string]string{"partition": "bucket(4, id)"}
	if _, err := g.flightClient(t).ExecuteIngest(ctx, reader(t, people(t, 0, 20)), part); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, cnxn, "parted", adbc.OptionValueIngestModeAppend, people(t, 100, 20)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*), sum(id) FROM parted WHERE id IN (3, 17, 103, 117, 999)`); got != "4|240" {
		t.Errorf("a partitioned table in the transaction: %s, want ids 3, 17, 103 and 117", got)
	}
	if got := joined(t, other, `SELECT count(*) FROM parted`); got != "20" {
		t.Errorf("a partitioned table from another connection: %s", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// A table created in the transaction: its rows are the transaction's
	// alone, and the table itself is gone once it rolls back.
	if _, err := ingest(t, cnxn, "fresh", adbc.OptionValueIngestModeCreate, people(t, 0, 7)); err != nil {
		t.Fatal(err)
	}
	if got := joined(t, cnxn, `SELECT count(*) FROM fresh`); got != "7" {
		t.Errorf("a table created in the transaction: %s", got)
	}
	if rows, err := queryRows(t, other, `SELECT count(*) FROM fresh`, nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("another connection: %v, %v; want the table not found until COMMIT (a staged create)", rows, err)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if rows, err := queryRows(t, cnxn, `SELECT count(*) FROM fresh`, nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("after rollback: %v, %v; want the table not found (the rolled-back create leaves none)", rows, err)
	}
}
