package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// queryInTxn plans query in transaction id through c and reads it there:
// both calls name the transaction, so a replica that does not hold it
// forwards them.
func queryInTxn(t *testing.T, c *flightsql.Client, id []byte, query string) ([]string, error) {
	t.Helper()
	cmd := mustAny(t, &pb.CommandStatementQuery{Query: query, TransactionId: id})
	info, err := c.Client.GetFlightInfo(context.Background(), &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, part := range readEndpoints(t, c, info) {
		out = append(out, part...)
	}
	return out, nil
}

// countIn counts a table's rows outside any transaction through c.
func countIn(t *testing.T, c *flightsql.Client, table string) string {
	t.Helper()
	info, err := c.Execute(context.Background(), "SELECT count(*) FROM "+table)
	if err != nil {
		return err.Error()
	}
	return strings.Join(readInfo(t, c, info), ",")
}

// TestTransactionAcrossReplicas: two replicas over the same catalog, with
// cluster.advertise set, and a client that sends each call to either, as
// a per-call load balancer would. A transaction begun on one is joined by
// an ingest sent to the other, read there (read-your-writes), and
// committed there: every call is forwarded to the replica holding it. A
// rollback the same way leaves nothing. A transaction id whose replica
// was altered is not forwarded; one whose replica is down is Unavailable,
// naming it.
func TestTransactionAcrossReplicas(t *testing.T) {
	requireEngine(t)
	shared := t.TempDir()
	catalog := fmt.Sprintf(`tickets: {signing_key: txn-replica-key}
catalogs:
  - name: lake
    type: iceberg
    properties: {catalog-type: sql, uri: "sqlite:///%s/catalog.db", warehouse: "file://%s/warehouse", create-namespaces: default}
`, shared, shared)
	a1, a2 := closedAddr(t), closedAddr(t)
	g1 := startGatewayOn(t, a1, catalog+fmt.Sprintf("cluster: {advertise: %q}\n", a1))
	g2 := startGatewayOn(t, a2, catalog+fmt.Sprintf("cluster: {advertise: %q}\n", a2))
	c1, c2 := g1.flightClient(t), g2.flightClient(t)
	ctx := context.Background()

	tx, err := c1.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(tx.ID()), "fgwt1.") {
		t.Fatalf("transaction id %q does not name its replica", tx.ID())
	}
	// Ingest on the other replica, in the transaction.
	opts := modeCreate("orders")
	opts.TransactionId = tx.ID()
	if n, err := c2.ExecuteIngest(ctx, reader(t, people(t, 0, 100)), opts); err != nil || n != 100 {
		t.Fatalf("ingest through replica 2: %d rows, %v", n, err)
	}
	if !strings.Contains(g2.logs.String(), "call forwarded to the transaction's replica") {
		t.Errorf("replica 2 logged no forwarding:\n%s", g2.logs.String())
	}
	// Read-your-writes through replica 2; invisible outside.
	got, err := queryInTxn(t, c2, tx.ID(), "SELECT count(*) FROM orders")
	if err != nil || !slices.Equal(got, []string{"100"}) {
		t.Fatalf("query in the transaction through replica 2: %v, %v", got, err)
	}
	// A result bigger than gRPC's default 4 MiB message comes through.
	big := g2.flightClient(t, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	got, err = queryInTxn(t, big, tx.ID(), "SELECT repeat('x', 1000) || i AS s FROM range(8000) t(i)")
	if err != nil || len(got) != 8000 {
		t.Fatalf("a large result in the transaction through replica 2: %d rows, %v", len(got), err)
	}
	// The transaction creates the table (a staged create): outside it
	// there is none until COMMIT.
	if got := countIn(t, c2, "orders"); !strings.Contains(got, "not found") {
		t.Fatalf("outside the transaction: %s, want the table not found", got)
	}
	// Commit through replica 2.
	if err := endTransaction(t, c2, tx.ID(), pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT); err != nil {
		t.Fatalf("commit through replica 2: %v", err)
	}
	for i, c := range []*flightsql.Client{c1, c2} {
		if got := countIn(t, c, "orders"); got != "100" {
			t.Errorf("replica %d counts %s rows after the commit, want 100", i+1, got)
		}
	}

	// Calls that name no transaction are served where they arrive (the
	// router hands the request it read to the handler): an auto-commit
	// ingest, a query.
	if n, err := c2.ExecuteIngest(ctx, reader(t, people(t, 0, 30)), modeCreate("local_orders")); err != nil || n != 30 {
		t.Fatalf("auto-commit ingest through replica 2: %d rows, %v", n, err)
	}
	if got := countIn(t, c2, "local_orders"); got != "30" {
		t.Errorf("replica 2 counts %s rows of its own ingest, want 30", got)
	}

	// Rollback: begun on 2, ingested and rolled back through 1.
	tx2, err := c2.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := len(parquetIn(t, filepath.Join(shared, "warehouse")))
	opts = modeAppend("orders")
	opts.TransactionId = tx2.ID()
	if n, err := c1.ExecuteIngest(ctx, reader(t, people(t, 100, 50)), opts); err != nil || n != 50 {
		t.Fatalf("ingest through replica 1: %d rows, %v", n, err)
	}
	if err := endTransaction(t, c1, tx2.ID(), pb.ActionEndTransactionRequest_END_TRANSACTION_ROLLBACK); err != nil {
		t.Fatalf("rollback through replica 1: %v", err)
	}
	if got := countIn(t, c1, "orders"); got != "100" {
		t.Errorf("%s rows after the rollback, want 100", got)
	}
	if after := len(parquetIn(t, filepath.Join(shared, "warehouse"))); after != before {
		t.Errorf("%d data files after the rollback, %d before: staged files left", after, before)
	}

	// An id whose replica was rewritten fails its signature: not
	// forwarded, unknown here.
	tx3, err := c1.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	forged := retarget(t, tx3.ID(), a2)
	err = endTransaction(t, c2, forged, pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT)
	assertStatus(t, err, codes.NotFound, "not found")

	// The holding replica down: Unavailable, naming it.
	g1.shutdown()
	err = endTransaction(t, c2, tx3.ID(), pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT)
	assertStatus(t, err, codes.Unavailable, a1)
}

// retarget rewrites the replica a transaction id names, keeping its
// signature.
func retarget(t *testing.T, id []byte, addr string) []byte {
	t.Helper()
	s := strings.TrimPrefix(string(id), "fgwt1.")
	dot := strings.LastIndexByte(s, '.')
	payload, err := base64.RawURLEncoding.DecodeString(s[:dot])
	if err != nil {
		t.Fatal(err)
	}
	var replica string
	for _, f := range strings.Split(strings.Trim(string(payload), "{}"), ",") {
		if strings.HasPrefix(f, `"replica":`) {
			replica = strings.Trim(strings.TrimPrefix(f, `"replica":`), `"`)
		}
	}
	changed := strings.Replace(string(payload), replica, addr, 1)
	return []byte("fgwt1." + base64.RawURLEncoding.EncodeToString([]byte(changed)) + s[dot:])
}

// parquetIn lists the Parquet files under dir.
func parquetIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	return out
}
