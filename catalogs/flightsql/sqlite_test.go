package flightsql

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// startSQLite serves arrow-go's SQLite example Flight SQL server on
// loopback: transactions and prepared statements, no bulk ingest.
func startSQLite(t *testing.T) string {
	t.Helper()
	return startSQLiteWith(t, nil)
}

// startSQLiteWith is startSQLite with server middleware.
func startSQLiteWith(t *testing.T, mw []flight.ServerMiddleware) string {
	t.Helper()
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	s := flight.NewServerWithMiddleware(mw)
	s.RegisterFlightService(fsql.NewFlightServer(srv))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.InitListener(lis)
	go func() { _ = s.Serve() }()
	t.Cleanup(func() { s.Shutdown(); _ = db.Close() })
	return lis.Addr().String()
}

// countRows counts intTable's rows with keyName prefix, straight from the
// upstream.
func countRows(t *testing.T, p *Provider, prefix string) int64 {
	t.Helper()
	r, err := p.query(context.Background(), "count", func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, "SELECT count(*) FROM intTable WHERE keyName LIKE '"+prefix+"%'")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var n int64
	for r.Next() {
		n = r.RecordBatch().Column(0).(*array.Int64).Value(0)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSQLitePreparedInsertInTransaction: against an upstream with
// transactions and no bulk ingest, a unit of work's rows go by prepared
// INSERT inside one upstream transaction: invisible until the commit,
// visible after it, and gone after a discard.
func TestSQLitePreparedInsertInTransaction(t *testing.T) {
	addr := startSQLite(t)
	p, err := Open(context.Background(), "lite", map[string]string{propURI: "grpc://" + addr, propNamespace: "main", catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	tbl := catalogs.TableIdent{Catalog: "lite", Namespace: []string{"main"}, Name: "intTable"}
	spec, err := p.GetTableSpec(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Schema.NumFields() != 4 {
		t.Fatalf("intTable schema: %s", spec.Schema)
	}
	// An upstream that sends no schemas in GetTables is probed: the same
	// columns.
	p.probeOnly.Store(true)
	p.forgetSpec(tbl)
	probed, err := p.GetTableSpec(ctx, tbl)
	p.probeOnly.Store(false)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if probed.Schema.NumFields() != 4 || probed.Schema.Field(1).Name != spec.Schema.Field(1).Name {
		t.Fatalf("probed schema %s, GetTables' %s", probed.Schema, spec.Schema)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "keyName", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	batch, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema,
		strings.NewReader(`[{"keyName": "tx-a", "value": 1}, {"keyName": "tx-b", "value": 2}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Release()
	write := func(unit string) []catalogs.WriteReceipt {
		ws, err := p.OpenStream(ctx, tbl, catalogs.WriteTxn{ID: unit, CommitID: unit})
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
		rs, err := ws.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	// No read between the write and the commit: SQLite's shared-cache
	// table lock makes it wait for the transaction.
	rs := write("commit-me")
	if _, err := p.Commit(ctx, tbl, rs); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, p, "tx-"); n != 2 {
		t.Fatalf("committed rows: %d, want 2", n)
	}
	rs = write("roll-me-back")
	if err := p.Discard(ctx, tbl, rs); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, p, "tx-"); n != 2 {
		t.Fatalf("rows after a discard: %d, want 2", n)
	}
	if _, err := p.Commit(ctx, tbl, rs); catalogs.Kind(err) != catalogs.ErrFailedPrecondition {
		t.Fatalf("commit after a discard: %v, want FailedPrecondition", err)
	}
	c, _ := p.cachedCaps()
	if c.ingest || !c.transactions {
		t.Fatalf("capabilities read from the SQLite server: %+v", c)
	}
	if via, err := p.writeVia(c, tbl); via != viaInsert || err != nil {
		t.Fatalf("write path: %q %v, want prepared INSERT", via, err)
	}
}

// TestSQLiteUnitOfWorkEnds: against an upstream that takes writes by
// prepared INSERT, a replace stream is refused FailedPrecondition naming
// the upstream and the missing bulk ingest; and once a unit of work's
// upstream transaction has ended (a stream aborted), a new stream of it
// is refused rather than beginning a second upstream transaction that
// its COMMIT would commit alone.
func TestSQLiteUnitOfWorkEnds(t *testing.T) {
	addr := startSQLite(t)
	p, err := Open(context.Background(), "lite", map[string]string{propURI: "grpc://" + addr, propNamespace: "main", catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	tbl := catalogs.TableIdent{Catalog: "lite", Namespace: []string{"main"}, Name: "intTable"}
	_, err = p.OpenStream(ctx, tbl, catalogs.WriteTxn{ID: "replace", CommitID: "replace", AutoCommit: true, Replace: true})
	if catalogs.Kind(err) != catalogs.ErrFailedPrecondition || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "TABLE_EXISTS_OPTION_REPLACE") {
		t.Fatalf("replace stream by prepared INSERT: %v, want FailedPrecondition naming the upstream and bulk ingest", err)
	}

	unit := catalogs.WriteTxn{ID: "tx-1", CommitID: "txn-tx-1"}
	ws, err := p.OpenStream(ctx, tbl, unit)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.OpenStream(ctx, tbl, unit); catalogs.Kind(err) != catalogs.ErrFailedPrecondition {
		t.Fatalf("a stream of a unit of work whose upstream transaction was rolled back: %v, want FailedPrecondition", err)
	}
}
