package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// faults are what the test-faulty catalogs of this test binary do to
// their commits, by catalog name.
var faults sync.Map // name -> *fault

type fault struct {
	mu sync.Mutex
	// loseReply: the commit lands, then the call fails Unavailable.
	loseReply int
	// blind: FindCommit fails Unavailable (nobody can tell the outcome).
	blind bool
	// refuse: the commit fails with a conflict and does not land.
	refuse int
}

func (f *fault) take(n *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n > 0 {
		*n--
		return true
	}
	return false
}

// faulty is the real Iceberg backend with faults injected around its
// commits: everything else (staging, files, the catalog) is real.
type faulty struct {
	*iceberg.Provider
	f *fault
}

func init() {
	catalogs.Register("test-faulty", func(ctx context.Context, name string, props map[string]string) (catalogs.Provider, error) {
		p, err := iceberg.Open(ctx, name, props)
		if err != nil {
			return nil, err
		}
		f, _ := faults.LoadOrStore(name, &fault{})
		return &faulty{Provider: p, f: f.(*fault)}, nil
	})
}

func (p *faulty) CommitOnce(ctx context.Context, t catalogs.TableIdent, id string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if p.f.take(&p.f.refuse) {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrConflict, "table %s: injected conflict", t)
	}
	out, err := p.Provider.CommitOnce(ctx, t, id, rs)
	if err == nil && p.f.take(&p.f.loseReply) {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: injected lost reply", t)
	}
	return out, err
}

func (p *faulty) FindCommit(ctx context.Context, t catalogs.TableIdent, id string) (catalogs.CommitRecord, bool, error) {
	p.f.mu.Lock()
	blind := p.f.blind
	p.f.mu.Unlock()
	if blind {
		return catalogs.CommitRecord{}, false, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: injected catalog outage", t)
	}
	return p.Provider.FindCommit(ctx, t, id)
}

// startFaulty starts a gateway whose embedded-layout catalog "lake" is the
// faulty backend; it returns the gateway and its fault switches.
func startFaulty(t *testing.T, name string) (*gateway, *fault) {
	t.Helper()
	f := &fault{}
	faults.Store(name, f)
	t.Cleanup(func() { faults.Delete(name) })
	g := startGateway(t, fmt.Sprintf(`
catalogs:
  - name: %s
    type: test-faulty
    properties: {catalog-type: sql, uri: "sqlite:///${DATA}/catalog.db", warehouse: "file://${DATA}/warehouse", create-namespaces: default}
`, name))
	return g, f
}

// stagedTxn creates table with 2 rows, then stages 5 more in a new
// transaction; it returns the transaction and a copy of its id.
func stagedTxn(t *testing.T, c *flightsql.Client, table string) (*flightsql.Txn, []byte) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 2)), modeCreate(table)); err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := modeAppend(table)
	o.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 5)), o); err != nil {
		t.Fatal(err)
	}
	return tx, append([]byte(nil), tx.ID()...)
}

func TestCommitWhoseReplyWasLostKeepsItsFiles(t *testing.T) {
	g, f := startFaulty(t, "lake")
	c := g.flightClient(t)
	ctx := context.Background()
	tx, id := stagedTxn(t, c, "lost")
	f.mu.Lock()
	f.loseReply = 1
	f.mu.Unlock()
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("a commit that landed must be reported committed: %v", err)
	}
	// Every file the landed snapshot references is still there: the
	// independent reader reads all 7 rows.
	if got := rows(g.readTable(t, "lost")); got != 7 {
		t.Fatalf("rows = %d, want 7", got)
	}
	// The client lost our reply too, and retries: committed, not doubled.
	if err := endTransaction(t, c, id, commitAction); err != nil {
		t.Fatalf("retried COMMIT: %v", err)
	}
	if got := rows(g.readTable(t, "lost")); got != 7 {
		t.Fatalf("rows after the retry = %d, want 7", got)
	}
}

func TestCommitWithUnknownOutcomeStaysRetryable(t *testing.T) {
	g, f := startFaulty(t, "lake")
	c := g.flightClient(t)
	ctx := context.Background()
	tx, id := stagedTxn(t, c, "unknown")
	f.mu.Lock()
	f.loseReply, f.blind = 1, true
	f.mu.Unlock()
	err := tx.Commit(ctx)
	assertStatus(t, err, codes.Unavailable, "outcome unknown")
	// The catalog is back: the retried COMMIT finds the landed commit and
	// does not apply it twice.
	f.mu.Lock()
	f.blind = false
	f.mu.Unlock()
	if err := endTransaction(t, c, id, commitAction); err != nil {
		t.Fatalf("retried COMMIT: %v", err)
	}
	if got := rows(g.readTable(t, "unknown")); got != 7 {
		t.Fatalf("rows = %d, want 7", got)
	}
}

func TestFailedCommitIsNeverReportedCommitted(t *testing.T) {
	g, f := startFaulty(t, "lake")
	c := g.flightClient(t)
	ctx := context.Background()
	tx, id := stagedTxn(t, c, "refused")
	f.mu.Lock()
	f.refuse = 1
	f.mu.Unlock()
	assertStatus(t, tx.Commit(ctx), codes.Aborted, "still open")
	if got := rows(g.readTable(t, "refused")); got != 2 {
		t.Fatalf("rows = %d after a refused commit", got)
	}
	// Retried, it lands, once.
	if err := endTransaction(t, c, id, commitAction); err != nil {
		t.Fatalf("retried COMMIT: %v", err)
	}
	if got := rows(g.readTable(t, "refused")); got != 7 {
		t.Fatalf("rows = %d, want 7", got)
	}
}

const commitAction = pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT

// stallingReader yields its batches, then blocks until released, so that
// an upload stays open while the test does something else.
type stallingReader struct {
	array.RecordReader
	sent    chan struct{}
	release chan struct{}
	n       int
}

// cancelStalled cancels a stalled ingest's context, then releases its
// reader. The pause between lets gRPC's client reset the stream first: a
// reader released at once can end the upload (its last frames and
// END_STREAM) before the reset goes out, and the server then sees a
// complete upload of the batches sent so far, which it rightly commits
// (TestStagedCreateFailedLeavesNoTable failed so under CI's load).
func cancelStalled(cancel context.CancelFunc, st *stallingReader) {
	cancel()
	time.Sleep(200 * time.Millisecond)
	close(st.release)
}

func (s *stallingReader) Next() bool {
	if s.n == 1 {
		close(s.sent)
		<-s.release
		return false
	}
	s.n++
	return s.RecordReader.Next()
}

// TestFailedCreateNeverDropsOthersRows: a create_append that fails after
// another writer made the table and committed to it takes none of that
// writer's rows with it.
func TestFailedCreateNeverDropsOthersRows(t *testing.T) {
	g := startGateway(t, "")
	a := g.flightClient(t)
	aCtx, cancelA := context.WithCancel(context.Background())
	st := &stallingReader{RecordReader: reader(t, people(t, 0, 3)), sent: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := a.ExecuteIngest(aCtx, st, ingestOpts("shared", flightsql.TableDefinitionOptionsTableNotExistOptionCreate,
			flightsql.TableDefinitionOptionsTableExistsOptionAppend))
		done <- err
	}()
	<-st.sent
	// A's create is staged: the table exists only once A's commit lands.
	// B's create_append makes it meanwhile and is told its rows landed.
	n, err := ingest(t, g.adbcConn(t, nil), "shared", adbc.OptionValueIngestModeCreateAppend, people(t, 100, 10))
	if err != nil || n != 10 {
		t.Fatalf("B's create_append: n = %d, %v", n, err)
	}
	// A dies mid-stream.
	cancelStalled(cancelA, st)
	if err := <-done; err == nil {
		t.Fatal("A's cancelled ingest succeeded")
	}
	// B's acknowledged rows are there, and nothing of A's.
	time.Sleep(200 * time.Millisecond)
	got := int64Column(t, g.readTable(t, "shared"), "id")
	if !slices.Equal(got, ids(100, 10)) {
		t.Fatalf("rows = %v, want B's 10 rows", got)
	}
}

// badStrings is a people batch whose row 2 has a name that is not UTF-8.
func badStrings(t *testing.T) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, peopleSchema)
	defer b.Release()
	for i, name := range []string{"ok", "fine", "bad\xff\xfe", "ok"} {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(name)
		b.Field(2).(*array.Float64Builder).Append(1)
	}
	return b.NewRecordBatch()
}

func TestInvalidUTF8IsRefused(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 2)), modeCreate("utf8")); err != nil {
		t.Fatal(err)
	}
	files := g.parquetFiles(t)
	_, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 3), badStrings(t)), modeAppend("utf8"))
	assertStatus(t, err, codes.InvalidArgument, `column "name", row 5`)
	if got := rows(g.readTable(t, "utf8")); got != 2 {
		t.Fatalf("rows = %d", got)
	}
	if !slices.Equal(g.parquetFiles(t), files) {
		t.Fatal("a refused upload left files behind")
	}
	// The table is still readable by everyone.
	if got := rows(g.readTable(t, "utf8")); got != 2 {
		t.Fatalf("rows = %d", got)
	}
}

func TestIdempotencyKeysArePerPrincipal(t *testing.T) {
	alice, _ := auth.HashPassword("alice-pw")
	bob, _ := auth.HashPassword("bob-pw")
	g := startGateway(t, fmt.Sprintf(`
auth:
  enabled: true
  users:
    - {name: alice, realm: sales, password_hash: "%s"}
    - {name: bob, realm: sales, password_hash: "%s"}
catalogs:
  - name: lake
    type: iceberg
    realm: sales
    properties: {catalog-type: sql, uri: "sqlite:///${DATA}/catalog.db", warehouse: "file://${DATA}/warehouse", create-namespaces: default}
`, alice, bob))
	ca, actx := login(t, g, "alice", "alice-pw")
	cb, bctx := login(t, g, "bob", "bob-pw")
	if _, err := ca.ExecuteIngest(actx, reader(t, people(t, 0, 1)), modeCreate("idem")); err != nil {
		t.Fatal(err)
	}
	keyed := func(from, n int) *flightsql.ExecuteIngestOpts {
		o := modeAppend("idem")
		o.Options = map[string]string{"flightgw.idempotency_key": "nightly-load"}
		return o
	}
	if n, err := ca.ExecuteIngest(actx, reader(t, people(t, 10, 7)), keyed(10, 7)); err != nil || n != 7 {
		t.Fatalf("alice: n=%d err=%v", n, err)
	}
	// Bob picks the same key: his is another write, not alice's retry.
	if n, err := cb.ExecuteIngest(bctx, reader(t, people(t, 20, 3)), keyed(20, 3)); err != nil || n != 3 {
		t.Fatalf("bob: n=%d err=%v", n, err)
	}
	// Alice's retry is still recognised as hers.
	if n, err := ca.ExecuteIngest(actx, reader(t, people(t, 10, 7)), keyed(10, 7)); err != nil || n != 7 {
		t.Fatalf("alice's retry: n=%d err=%v", n, err)
	}
	if got := rows(g.readTable(t, "idem")); got != 11 {
		t.Fatalf("rows = %d, want 1 + 7 + 3", got)
	}
}

func TestConcurrentIngestsWithOneKeyLeaveNoOrphan(t *testing.T) {
	g := startGateway(t, "")
	ctx := context.Background()
	c := g.flightClient(t)
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), modeCreate("race")); err != nil {
		t.Fatal(err)
	}
	o := modeAppend("race")
	o.Options = map[string]string{"flightgw.idempotency_key": "k1"}
	var readers []*stallingReader
	errs := make(chan error, 2)
	for range 2 {
		st := &stallingReader{RecordReader: reader(t, people(t, 10, 5)), sent: make(chan struct{}), release: make(chan struct{})}
		readers = append(readers, st)
		go func() {
			_, err := g.flightClient(t).ExecuteIngest(ctx, st, o)
			errs <- err
		}()
	}
	// Both uploads have staged their files before either commits.
	for _, st := range readers {
		<-st.sent
	}
	time.Sleep(300 * time.Millisecond)
	for _, st := range readers {
		close(st.release)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := rows(g.readTable(t, "race")); got != 6 {
		t.Fatalf("rows = %d, want 1 + 5", got)
	}
	// Only the files of the landed snapshot remain: the loser's were
	// deleted.
	referenced := dataFilesOf(t, g, "race")
	if got := g.parquetFiles(t); !slices.Equal(got, referenced) {
		t.Fatalf("files on disk %v, referenced %v", got, referenced)
	}
}

// dataFilesOf lists the local paths of the data files of a table's
// current snapshot.
func dataFilesOf(t *testing.T, g *gateway, name string) []string {
	t.Helper()
	tasks, err := g.loadTable(t, name).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		p := task.File.FilePath()
		if len(p) > len("file://") && p[:len("file://")] == "file://" {
			p = p[len("file://"):]
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// converted is a batch of types the Iceberg backend converts (int8 to
// int, large_string to string, timestamp[ns] to timestamp[us]).
func converted(t *testing.T, from, n int) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int8},
		{Name: "s", Type: arrow.BinaryTypes.LargeString},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
	}, nil)
	return batchFromJSON(t, schema, func(i int) string {
		return fmt.Sprintf(`{"k": %d, "s": "v%d", "ts": "2026-12-01T00:00:%02d"}`, from+i, from+i, i)
	}, n)
}

func TestReplaceKeepsTheTable(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	replace := ingestOpts("conv", flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionReplace)
	if _, err := c.ExecuteIngest(ctx, reader(t, converted(t, 0, 3)), replace); err != nil {
		t.Fatal(err)
	}
	before := g.loadTable(t, "conv").Metadata()
	// The same columns again: one overwrite snapshot, same table.
	if n, err := c.ExecuteIngest(ctx, reader(t, converted(t, 10, 4)), replace); err != nil || n != 4 {
		t.Fatalf("replace: n=%d err=%v", n, err)
	}
	after := g.loadTable(t, "conv").Metadata()
	if after.TableUUID() != before.TableUUID() {
		t.Fatal("replace created a new table")
	}
	if len(after.Snapshots()) != len(before.Snapshots())+1 || after.CurrentSnapshot().Summary.Operation != "overwrite" {
		t.Fatalf("snapshots %d -> %d, operation %v", len(before.Snapshots()), len(after.Snapshots()), after.CurrentSnapshot().Summary)
	}
	if after.CurrentSchema().ID != before.CurrentSchema().ID {
		t.Fatal("the same columns changed the schema")
	}
	if got := int64Column(t, g.readTable(t, "conv"), "k"); !slices.Equal(got, ids(10, 4)) {
		t.Fatalf("rows = %v", got)
	}
	// Other columns: a new schema in the same table, history kept.
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 50, 2)), replace); err != nil {
		t.Fatal(err)
	}
	last := g.loadTable(t, "conv").Metadata()
	if last.TableUUID() != before.TableUUID() || len(last.Snapshots()) != len(after.Snapshots())+1 {
		t.Fatal("a replace with other columns did not keep the table and its history")
	}
	if got := int64Column(t, g.readTable(t, "conv"), "id"); !slices.Equal(got, ids(50, 2)) {
		t.Fatalf("rows = %v", got)
	}
}

func TestReplaceThenAppendInOneTransaction(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, converted(t, 0, 3)), modeCreate("ra")); err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replace := ingestOpts("ra", flightsql.TableDefinitionOptionsTableNotExistOptionFail, flightsql.TableDefinitionOptionsTableExistsOptionReplace)
	replace.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 2)), replace); err != nil {
		t.Fatal(err)
	}
	app := modeAppend("ra")
	app.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 2, 3)), app); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := int64Column(t, g.readTable(t, "ra"), "id"); !slices.Equal(got, ids(0, 5)) {
		t.Fatalf("rows = %v", got)
	}
}
