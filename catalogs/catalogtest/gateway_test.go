//go:build duckdb_arrow

// The gateway test reads back through SQL queries, which need the engine
// (the duckdb_arrow build tag; make sets it).

package catalogtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/server"
)

// memType is the catalog type the double registers as in this test
// binary; the property "instance" names the double for the test to find,
// "variant" picks batch, txn or multi.
const memType = "memtest"

// instances are the doubles the gateways of this test binary opened, by
// their "instance" property.
var instances sync.Map // string -> *mem

func init() {
	catalogs.Register(memType, func(_ context.Context, name string, props map[string]string) (catalogs.Provider, error) {
		m := newMem(name)
		if _, dup := instances.LoadOrStore(props["instance"], m); dup {
			return nil, catalogs.Errorf(catalogs.ErrAlreadyExists, "catalog %q: instance %q is already open", name, props["instance"])
		}
		return wrap(m, props["variant"]), nil
	})
}

// lockedBuffer collects the gateway's log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startGateway runs the real server in-process on a loopback port with
// the YAML configuration given (as integration/harness_test.go does) and
// returns its address. It stops when the test ends.
func startGateway(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("FLIGHTGW_DATA_DIR", dir)
	t.Setenv("FLIGHTGW_LISTEN", "127.0.0.1:0")
	path := filepath.Join(dir, "flightgw.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := server.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	s, err := server.New(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		s.Shutdown()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if strings.Contains(logs.String(), "panic in handler") {
			t.Errorf("a handler panicked:\n%s", logs.String())
		}
	})
	return lis.Addr().String()
}

// connect opens an ADBC Flight SQL connection to addr.
func connect(t *testing.T, addr string) adbc.Connection {
	t.Helper()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ingest bulk-ingests batches, as one stream, into catalog.default.table.
func ingest(t *testing.T, c adbc.Connection, catalog, table, mode string, batches ...arrow.RecordBatch) int64 {
	t.Helper()
	n, err := ingestRows(c, catalog, table, mode, batches...)
	if err != nil {
		t.Fatalf("ingest into %s.%s: %v", catalog, table, err)
	}
	return n
}

// tryIngest is ingest that returns the error.
func tryIngest(c adbc.Connection, catalog, table, mode string, batches ...arrow.RecordBatch) error {
	_, err := ingestRows(c, catalog, table, mode, batches...)
	return err
}

func ingestRows(c adbc.Connection, catalog, table, mode string, batches ...arrow.RecordBatch) (int64, error) {
	st, err := c.NewStatement()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: mode,
		adbc.OptionValueIngestTargetCatalog: catalog} {
		if err := st.SetOption(k, v); err != nil {
			return 0, err
		}
	}
	rdr, err := array.NewRecordReader(batches[0].Schema(), batches)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	if err := st.BindStream(context.Background(), rdr); err != nil {
		return 0, err
	}
	return st.ExecuteUpdate(context.Background())
}

// rollback ends transaction id with ROLLBACK, by id.
func rollback(t *testing.T, addr, id string) error {
	t.Helper()
	c, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var a anypb.Any
	if err := a.MarshalFrom(&pb.ActionEndTransactionRequest{TransactionId: []byte(id), Action: pb.ActionEndTransactionRequest_END_TRANSACTION_ROLLBACK}); err != nil {
		t.Fatal(err)
	}
	body, err := proto.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Client.DoAction(context.Background(), &flight.Action{Type: flightsql.EndTransactionActionType, Body: body})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// wrongType is a batch whose id column is a string, which the suite's
// tables refuse.
func wrongType(t *testing.T) arrow.RecordBatch {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

// query runs q and renders its rows as "a|b" strings.
func query(t *testing.T, c adbc.Connection, q string) string {
	t.Helper()
	st, err := c.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetSqlQuery(q); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		b := rdr.RecordBatch()
		for i := range int(b.NumRows()) {
			cells := make([]string, b.NumCols())
			for j, col := range b.Columns() {
				cells[j] = col.ValueStr(i)
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(out, ",")
}

// batches builds rows [from, from+n) of the suite's schema in batches of
// the sizes given; the caller's test releases them.
func batches(t *testing.T, from int64, sizes ...int64) []arrow.RecordBatch {
	t.Helper()
	var out []arrow.RecordBatch
	for _, n := range sizes {
		b := catalogtest.Batch(from, n)
		t.Cleanup(b.Release)
		out = append(out, b)
		from += n
	}
	return out
}

// scanCount counts a table's visible rows through the double itself.
func scanCount(t *testing.T, m *mem, table string) int64 {
	t.Helper()
	res, err := m.Scan(context.Background(), catalogs.TableIdent{Catalog: m.name, Namespace: []string{"default"}, Name: table}, catalogs.ScanRequest{})
	if err != nil {
		t.Fatalf("Scan(%s): %v", table, err)
	}
	defer res.Reader.Release()
	var n int64
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	return n
}

// txnsOn lists the backend transactions opened on table.
func txnsOn(m *mem, table string) []*memTxn {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*memTxn
	for _, x := range m.txns {
		if x.table.ident.Name == table {
			out = append(out, x)
		}
	}
	return out
}

// commitsOn lists the commits that landed on table.
func commitsOn(c memCalls, table string) []memCommit {
	var out []memCommit
	for _, x := range c.commits {
		if x.table == table {
			out = append(out, x)
		}
	}
	return out
}

// TestGatewayWritesThroughDouble drives the real gateway with the ADBC
// driver against the double, as a backend that is nothing like Iceberg:
// an auto-commit ingest into the WriteBatch-only variant takes the
// fallback path (a WriteBatch and a receipt per batch, one commit); a
// Flight SQL transaction on the transaction-scoped variant makes one
// backend transaction per table holding every ingest of the transaction,
// committed once with commit id txn-<id>; a rolled-back one is discarded
// and leaves nothing visible; an aborted stream dooms its transaction's
// COMMIT; queries read the tables back through Scan. The subtests run in
// order, each on what the ones before left.
func TestGatewayWritesThroughDouble(t *testing.T) {
	inst := strings.NewReplacer("/", "_").Replace(t.Name())
	addr := startGateway(t, fmt.Sprintf(`
default_catalog: mem
catalogs:
  - name: mem
    type: %[1]s
    properties: {variant: batch, instance: %[2]s-batch}
  - name: memtx
    type: %[1]s
    properties: {variant: txn, instance: %[2]s-txn}
`, memType, inst))
	load := func(name string) *mem {
		v, ok := instances.Load(inst + "-" + name)
		if !ok {
			t.Fatalf("the gateway did not open double %s", name)
		}
		t.Cleanup(func() { instances.Delete(inst + "-" + name) })
		return v.(*mem)
	}
	batchM, txnM := load("batch"), load("txn")
	reader := connect(t, addr)

	t.Run("WriteBatchFallback", func(t *testing.T) {
		c := connect(t, addr)
		if n := ingest(t, c, "mem", "people", adbc.OptionValueIngestModeCreate, batches(t, 0, 10, 20, 30)...); n != 60 {
			t.Errorf("ingest reported %d rows, want 60", n)
		}
		calls := batchM.snapshot()
		if calls.writeBatches != 3 {
			t.Errorf("the double saw %d WriteBatch calls, want one per batch (3)", calls.writeBatches)
		}
		cs := commitsOn(calls, "people")
		if len(cs) != 1 || cs[0].receipts != 3 || cs[0].rows != 60 || !strings.HasPrefix(cs[0].commitID, "write-") {
			t.Fatalf("commits = %+v, want one of 3 receipts and 60 rows with an auto-commit id", cs)
		}
		if got := query(t, reader, `SELECT count(*), min(id), max(id) FROM mem.default.people`); got != "60|0|59" {
			t.Errorf("read back through the gateway: %s", got)
		}
		if n := scanCount(t, batchM, "people"); n != 60 {
			t.Errorf("the double holds %d rows, want 60", n)
		}
	})

	c := connect(t, addr)
	ctx := context.Background()
	if err := c.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	var committed string
	t.Run("TransactionCommit", func(t *testing.T) {
		ingest(t, c, "memtx", "a", adbc.OptionValueIngestModeCreate, batches(t, 0, 4, 6)...)
		ingest(t, c, "memtx", "a", adbc.OptionValueIngestModeAppend, batches(t, 10, 15)...)
		ingest(t, c, "memtx", "b", adbc.OptionValueIngestModeCreate, batches(t, 100, 5)...)
		if got := query(t, reader, `SELECT count(*) FROM memtx.default.a`); got != "0" {
			t.Errorf("another connection reads the open transaction's rows: %s", got)
		}
		if err := c.Commit(ctx); err != nil {
			t.Fatalf("COMMIT: %v", err)
		}
		calls := txnM.snapshot()
		if calls.writeBatches != 0 {
			t.Errorf("the transaction-scoped double saw %d WriteBatch calls, want none", calls.writeBatches)
		}
		for _, want := range []struct {
			table   string
			streams int
			rows    uint64
		}{{"a", 2, 25}, {"b", 1, 5}} {
			xs := txnsOn(txnM, want.table)
			if len(xs) != 1 {
				t.Fatalf("table %s: %d backend transactions, want one for the Flight transaction", want.table, len(xs))
			}
			x := xs[0]
			committed = x.w.ID
			if x.w.AutoCommit || x.w.CommitID != "txn-"+x.w.ID || len(x.streams) != want.streams {
				t.Errorf("table %s: backend transaction %+v with %d streams, want %d streams of a non-auto-commit unit with commit id txn-<id>",
					want.table, x.w, len(x.streams), want.streams)
			}
			if x.state != "committed" || !slices.Equal(x.commitIDs, []string{"txn-" + x.w.ID}) {
				t.Errorf("table %s: backend transaction is %s, committed with %v; want committed once with txn-%s", want.table, x.state, x.commitIDs, x.w.ID)
			}
			cs := commitsOn(calls, want.table)
			if len(cs) != 1 || cs[0].commitID != "txn-"+x.w.ID || cs[0].rows != want.rows || !slices.Equal(cs[0].txns, []string{x.w.ID}) {
				t.Errorf("table %s: commits %+v, want one of %d rows with commit id txn-%s", want.table, cs, want.rows, x.w.ID)
			}
		}
		if a, b := txnsOn(txnM, "a"), txnsOn(txnM, "b"); len(a) == 1 && len(b) == 1 && a[0].w.ID != b[0].w.ID {
			t.Errorf("tables a and b were written under units %s and %s, want the one transaction's", a[0].w.ID, b[0].w.ID)
		}
		if got := query(t, reader, `SELECT count(*), min(id), max(id) FROM memtx.default.a`); got != "25|0|24" {
			t.Errorf("a read back through the gateway: %s", got)
		}
		if got := query(t, reader, `SELECT count(*), min(id), max(id) FROM memtx.default.b`); got != "5|100|104" {
			t.Errorf("b read back through the gateway: %s", got)
		}
	})

	t.Run("TransactionRollback", func(t *testing.T) {
		ingest(t, c, "memtx", "a", adbc.OptionValueIngestModeAppend, batches(t, 500, 7)...)
		var open *memTxn
		for _, x := range txnsOn(txnM, "a") {
			if x.w.ID != committed {
				open = x
			}
		}
		if open == nil || open.state != "open" {
			t.Fatalf("the second transaction's ingest opened no backend transaction on a (committed one: %s)", committed)
		}
		if err := c.Rollback(ctx); err != nil {
			t.Fatalf("ROLLBACK: %v", err)
		}
		if x := txnM.txn("a", open.w.ID); x.state != "discarded" || len(x.commitIDs) != 0 {
			t.Errorf("rolled-back backend transaction is %s, committed with %v; want discarded", x.state, x.commitIDs)
		}
		if cs := commitsOn(txnM.snapshot(), "a"); len(cs) != 1 {
			t.Errorf("commits on a after ROLLBACK = %+v, want only the first transaction's", cs)
		}
		if got := query(t, reader, `SELECT count(*), max(id) FROM memtx.default.a`); got != "25|24" {
			t.Errorf("a after ROLLBACK, through the gateway: %s", got)
		}
		if n := scanCount(t, txnM, "a"); n != 25 {
			t.Errorf("the double holds %d rows of a after ROLLBACK, want 25", n)
		}
	})

	t.Run("AbortedStreamDoomsCommit", func(t *testing.T) {
		c := connect(t, addr)
		if err := c.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
			t.Fatal(err)
		}
		ingest(t, c, "memtx", "d", adbc.OptionValueIngestModeCreate, batches(t, 600, 5)...)
		bad := wrongType(t)
		if err := tryIngest(c, "memtx", "d", adbc.OptionValueIngestModeAppend, bad); err == nil || !strings.Contains(err.Error(), "id") {
			t.Fatalf("ingest of a string id column = %v, want an error naming id", err)
		}
		var doomed *memTxn
		for _, x := range txnsOn(txnM, "d") {
			if x.state == "open" {
				doomed = x
			}
		}
		if doomed == nil || !doomed.doomed || len(doomed.streams) != 2 {
			t.Fatalf("backend transaction of the failed ingest = %+v, want the transaction's, doomed by its aborted second stream", doomed)
		}
		err := c.Commit(ctx)
		var ae adbc.Error
		if !errors.As(err, &ae) || codes.Code(ae.VendorCode) != codes.FailedPrecondition ||
			!strings.Contains(err.Error(), "memtx.default.d") || !strings.Contains(err.Error(), "aborted stream") {
			t.Errorf("COMMIT of a doomed backend transaction = %v, want FailedPrecondition naming memtx.default.d", err)
		}
		if got := query(t, reader, `SELECT count(*) FROM memtx.default.d`); got != "0" {
			t.Errorf("d after the failed COMMIT: %s, want none of the transaction's rows", got)
		}
		// The transaction stays open after a failed COMMIT; the ADBC
		// driver (arrow-go's flightsql.Txn) forgets its id once COMMIT is
		// sent, so ROLLBACK goes by id through the Flight SQL client.
		if err := rollback(t, addr, doomed.w.ID); err != nil {
			t.Fatalf("ROLLBACK after the failed COMMIT: %v", err)
		}
		if doomed.state != "discarded" || len(doomed.commitIDs) != 0 {
			t.Errorf("doomed backend transaction after ROLLBACK is %s, committed with %v; want discarded", doomed.state, doomed.commitIDs)
		}
	})

	t.Run("AutoCommitUnit", func(t *testing.T) {
		ac := connect(t, addr)
		ingest(t, ac, "memtx", "b", adbc.OptionValueIngestModeAppend, batches(t, 200, 3, 3)...)
		var auto *memTxn
		for _, x := range txnsOn(txnM, "b") {
			if x.w.AutoCommit {
				auto = x
			}
		}
		if auto == nil || auto.w.ID != auto.w.CommitID || len(auto.streams) != 1 || !slices.Equal(auto.commitIDs, []string{auto.w.CommitID}) {
			t.Fatalf("auto-commit ingest: backend transaction %+v, want one stream committed once under its own id", auto)
		}
		if got := query(t, reader, `SELECT count(*) FROM memtx.default.b`); got != "11" {
			t.Errorf("b after the auto-commit ingest: %s", got)
		}
	})
}
