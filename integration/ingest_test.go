package integration

import (
	"context"
	"errors"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
)

func TestIngestModes(t *testing.T) {
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)

	n, err := ingest(t, cnxn, "modes", adbc.OptionValueIngestModeCreate, people(t, 0, 3))
	if err != nil || n != 3 {
		t.Fatalf("create: n=%d err=%v", n, err)
	}
	if got := int64Column(t, g.readTable(t, "modes"), "id"); !slices.Equal(got, ids(0, 3)) {
		t.Fatalf("after create: %v", got)
	}
	_, err = ingest(t, cnxn, "modes", adbc.OptionValueIngestModeCreate, people(t, 0, 3))
	assertADBC(t, err, adbc.StatusAlreadyExists, "modes")

	if n, err := ingest(t, cnxn, "modes", adbc.OptionValueIngestModeAppend, people(t, 3, 2)); err != nil || n != 2 {
		t.Fatalf("append: n=%d err=%v", n, err)
	}
	if got := int64Column(t, g.readTable(t, "modes"), "id"); !slices.Equal(got, ids(0, 5)) {
		t.Fatalf("after append: %v", got)
	}
	if n, err := ingest(t, cnxn, "modes", adbc.OptionValueIngestModeReplace, people(t, 100, 4)); err != nil || n != 4 {
		t.Fatalf("replace: n=%d err=%v", n, err)
	}
	if got := int64Column(t, g.readTable(t, "modes"), "id"); !slices.Equal(got, ids(100, 4)) {
		t.Fatalf("after replace: %v", got)
	}
	if n, err := ingest(t, cnxn, "modes", adbc.OptionValueIngestModeCreateAppend, people(t, 200, 1)); err != nil || n != 1 {
		t.Fatalf("create_append existing: n=%d err=%v", n, err)
	}
	if n, err := ingest(t, cnxn, "fresh", adbc.OptionValueIngestModeCreateAppend, people(t, 0, 2)); err != nil || n != 2 {
		t.Fatalf("create_append new: n=%d err=%v", n, err)
	}
	if got := rows(g.readTable(t, "modes")); got != 5 {
		t.Fatalf("modes rows = %d", got)
	}
	_, err = ingest(t, cnxn, "absent", adbc.OptionValueIngestModeAppend, people(t, 0, 1))
	assertADBC(t, err, adbc.StatusNotFound, "absent")
}

func TestTransactionVisibility(t *testing.T) {
	g := startGateway(t, "")
	auto := g.adbcConn(t, nil)
	if _, err := ingest(t, auto, "tv", adbc.OptionValueIngestModeCreate, people(t, 0, 1)); err != nil {
		t.Fatal(err)
	}
	before := g.parquetFiles(t)

	cnxn := g.adbcConn(t, nil)
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Rollback: nothing visible, nothing staged left behind.
	if _, err := ingest(t, cnxn, "tv", adbc.OptionValueIngestModeAppend, people(t, 10, 5)); err != nil {
		t.Fatal(err)
	}
	if got := rows(g.readTable(t, "tv")); got != 1 {
		t.Fatalf("uncommitted rows visible: %d", got)
	}
	if err := cnxn.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rows(g.readTable(t, "tv")); got != 1 {
		t.Fatalf("rolled back rows visible: %d", got)
	}
	if after := g.parquetFiles(t); !slices.Equal(after, before) {
		t.Fatalf("rollback left staged files:\nbefore %v\nafter  %v", before, after)
	}

	// Commit: invisible until EndTransaction, then all at once.
	ingest(t, cnxn, "tv", adbc.OptionValueIngestModeAppend, people(t, 20, 2))
	ingest(t, cnxn, "tv", adbc.OptionValueIngestModeAppend, people(t, 30, 3))
	if got := rows(g.readTable(t, "tv")); got != 1 {
		t.Fatalf("uncommitted rows visible: %d", got)
	}
	snapBefore := g.loadTable(t, "tv").CurrentSnapshot().SnapshotID
	if err := cnxn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl := g.loadTable(t, "tv")
	if got := int64Column(t, g.readTable(t, "tv"), "id"); !slices.Equal(got, []int64{0, 20, 21, 30, 31, 32}) {
		t.Fatalf("after commit: %v", got)
	}
	if parent := tbl.CurrentSnapshot().ParentSnapshotID; parent == nil || *parent != snapBefore {
		t.Fatalf("commit was not one snapshot on top of %d: parent %v", snapBefore, parent)
	}
}

func TestConcurrentTransactionsBothLand(t *testing.T) {
	g := startGateway(t, "")
	if _, err := ingest(t, g.adbcConn(t, nil), "cc", adbc.OptionValueIngestModeCreate, people(t, 0, 1)); err != nil {
		t.Fatal(err)
	}
	const writers = 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		cnxn := g.adbcConn(t, nil)
		if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
			t.Fatal(err)
		}
		rec := people(t, 1000*(w+1), 10)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ingest(t, cnxn, "cc", adbc.OptionValueIngestModeAppend, rec); err != nil {
				errs <- err
				return
			}
			errs <- cnxn.Commit(context.Background())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []int64{0}
	for w := range writers {
		want = append(want, ids(1000*(w+1), 10)...)
	}
	slices.Sort(want)
	if got := int64Column(t, g.readTable(t, "cc"), "id"); !slices.Equal(got, want) {
		t.Fatalf("rows = %v", got)
	}
}

func TestIdempotentIngest(t *testing.T) {
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "idem", adbc.OptionValueIngestModeCreate, people(t, 0, 0)); err != nil {
		t.Fatal(err)
	}
	key := []string{"adbc.flight.sql.rpc.call_header.x-flightgw-idempotency-key", "load-2026-11-29-001"}
	for range 3 {
		n, err := ingest(t, cnxn, "idem", adbc.OptionValueIngestModeAppend, people(t, 0, 7), key...)
		if err != nil || n != 7 {
			t.Fatalf("n=%d err=%v", n, err)
		}
	}
	if got := rows(g.readTable(t, "idem")); got != 7 {
		t.Fatalf("rows = %d, want 7 (retries must not append)", got)
	}
	n, err := ingest(t, cnxn, "idem", adbc.OptionValueIngestModeAppend, people(t, 7, 2), key[0], "another-key")
	if err != nil || n != 2 || rows(g.readTable(t, "idem")) != 9 {
		t.Fatalf("new key: n=%d err=%v", n, err)
	}
}

// assertADBC checks an ADBC error's status and that its message names want.
func assertADBC(t *testing.T, err error, code adbc.Status, want string) {
	t.Helper()
	var ae adbc.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want ADBC error %v naming %q, got %v", code, want, err)
	}
	if ae.Code != code {
		t.Fatalf("code = %v, want %v (%s)", ae.Code, code, ae.Msg)
	}
	if !containsFold(ae.Msg, want) {
		t.Fatalf("message %q does not name %q", ae.Msg, want)
	}
}

func TestLargeBatchesAndTheLimit(t *testing.T) {
	g := startGateway(t, "limits: {max_batch_bytes: 8388608}\n")
	c := g.flightClient(t)
	ctx := context.Background()

	// About 5 MiB: over gRPC's 4 MiB default, under the configured 8 MiB.
	big := people(t, 0, 200_000)
	n, err := c.ExecuteIngest(ctx, reader(t, big), modeCreate("big"))
	if err != nil || n != 200_000 {
		t.Fatalf("5 MiB batch: n=%d err=%v", n, err)
	}
	// About 16 MiB: refused with ResourceExhausted, nothing written.
	files := g.parquetFiles(t)
	_, err = c.ExecuteIngest(ctx, reader(t, people(t, 0, 600_000)), modeAppend("big"))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("16 MiB batch: %v", err)
	}
	if rows(g.readTable(t, "big")) != 200_000 || !slices.Equal(g.parquetFiles(t), files) {
		t.Fatal("an over-limit upload changed the table")
	}
}

func TestAbandonedTransactionIsRolledBack(t *testing.T) {
	g := startGateway(t, "timeouts: {txn_idle: 1s}\n")
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), modeCreate("abandoned")); err != nil {
		t.Fatal(err)
	}
	files := g.parquetFiles(t)
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := modeAppend("abandoned")
	o.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 10, 5)), o); err != nil {
		t.Fatal(err)
	}
	if len(g.parquetFiles(t)) <= len(files) {
		t.Fatal("the transaction staged no file")
	}
	// The client goes quiet; the reaper rolls back and deletes the files.
	if !eventually(t, 10*time.Second, func() bool { return slices.Equal(g.parquetFiles(t), files) }) {
		t.Fatalf("staged files of the abandoned transaction remain: %v", g.parquetFiles(t))
	}
	err = tx.Commit(ctx)
	assertStatus(t, err, codes.FailedPrecondition, "expired")
	if got := rows(g.readTable(t, "abandoned")); got != 1 {
		t.Fatalf("rows = %d", got)
	}
}

func TestClosedConnectionRollsBackItsTransaction(t *testing.T) {
	g := startGateway(t, "timeouts: {txn_orphan_grace: 1s}\n")
	if _, err := ingest(t, g.adbcConn(t, nil), "orphan", adbc.OptionValueIngestModeCreate, people(t, 0, 1)); err != nil {
		t.Fatal(err)
	}
	files := g.parquetFiles(t)

	ctx := context.Background()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + g.addr})
	if err != nil {
		t.Fatal(err)
	}
	cnxn, err := db.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, cnxn, "orphan", adbc.OptionValueIngestModeAppend, people(t, 10, 5)); err != nil {
		t.Fatal(err)
	}
	if len(g.parquetFiles(t)) <= len(files) {
		t.Fatal("the transaction staged no file")
	}
	// The client goes away without committing or rolling back.
	cnxn.Close()
	db.Close()
	if !eventually(t, 10*time.Second, func() bool { return slices.Equal(g.parquetFiles(t), files) }) {
		t.Fatalf("the closed connection's transaction kept its staged files: %v", g.parquetFiles(t))
	}
	if got := rows(g.readTable(t, "orphan")); got != 1 {
		t.Fatalf("rows = %d", got)
	}
}
