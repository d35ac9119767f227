package catalogtest

import (
	"context"
	"errors"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// testTxnStream checks StreamWriter's units of work: streams with one WriteTxn.ID on a
// table are one unit, committed together or discarded together; an
// aborted stream's rows never become visible (and, for a transaction-
// scoped backend, doom the commit of the others); streams of another
// WriteTxn are apart.
func (s suite) testTxnStream(t *testing.T) {
	probe := s.h.New(t)
	if _, ok := probe.Provider.(catalogs.StreamWriter); !ok {
		if s.cfg.TransactionScoped {
			t.Fatal("Config.TransactionScoped is declared but the backend does not implement catalogs.StreamWriter")
		}
		skipUnless(t, false, "catalogs.StreamWriter")
	}
	t.Run("OneTransaction", s.testTxnOne)
	t.Run("Discard", s.testTxnDiscard)
	t.Run("Abort", s.testTxnAbort)
	t.Run("Apart", s.testTxnApart)
}

// txnStream opens a stream of w on id and writes rows [from, from+n) in
// two batches.
func txnStream(t *testing.T, in *Instance, id catalogs.TableIdent, w catalogs.WriteTxn, from, n int64) catalogs.WriteStream {
	t.Helper()
	ctx := context.Background()
	ws, err := in.Provider.(catalogs.StreamWriter).OpenStream(ctx, id, w)
	if err != nil {
		t.Fatalf("OpenStream(%s, %s): %v", id, w.ID, err)
	}
	half := n / 2
	for _, part := range [][2]int64{{from, half}, {from + half, n - half}} {
		b := Batch(part[0], part[1])
		err := ws.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatalf("txn stream Write(%s, %s): %v", id, w.ID, err)
		}
	}
	return ws
}

// closeStream closes ws and checks its receipts hold n rows.
func closeStream(t *testing.T, ws catalogs.WriteStream, n int64) []catalogs.WriteReceipt {
	t.Helper()
	rs, err := ws.Close(context.Background())
	if err != nil {
		t.Fatalf("txn stream Close: %v", err)
	}
	var got uint64
	for _, r := range rs {
		got += r.RowCount
	}
	if got != uint64(n) {
		t.Fatalf("txn stream receipts hold %d rows, want %d", got, n)
	}
	return rs
}

func (s suite) testTxnOne(t *testing.T) {
	in, id := s.setup(t, "txn_one")
	ctx := context.Background()
	w := catalogs.WriteTxn{ID: "conform-one", CommitID: "txn-conform-one"}
	// Two streams of one unit of work, open at the same time.
	a := txnStream(t, in, id, w, 0, 40)
	b := txnStream(t, in, id, w, 100, 60)
	rs := append(closeStream(t, a, 40), closeStream(t, b, 60)...)
	if n := rows(t, in, id); n != 0 {
		t.Fatalf("rows before the commit = %d, want 0", n)
	}
	out, err := commit(ctx, in, id, w.CommitID, rs)
	if err != nil {
		t.Fatalf("commit of two streams of %s: %v", w.ID, err)
	}
	if n := rows(t, in, id); n != 100 {
		t.Fatalf("rows after one commit of both streams = %d, want 100", n)
	}
	ic, ok := in.Provider.(catalogs.IdempotentCommitter)
	if !ok {
		return
	}
	again, err := ic.CommitOnce(ctx, id, w.CommitID, rs)
	if err != nil {
		t.Fatalf("repeated CommitOnce(%s): %v", w.CommitID, err)
	}
	if s.cfg.Snapshots && again.SnapshotID != out.SnapshotID {
		t.Errorf("repeated CommitOnce snapshot = %d, want %d", again.SnapshotID, out.SnapshotID)
	}
	if n := rows(t, in, id); n != 100 {
		t.Errorf("rows after a repeated CommitOnce = %d, want 100", n)
	}
	rec, found, err := ic.FindCommit(ctx, id, w.CommitID)
	if err != nil || !found || rec.RowCount != 100 {
		t.Errorf("FindCommit(%s) = %+v, %v, %v; want 100 rows", w.CommitID, rec, found, err)
	}

	// An auto-commit unit of work: its id is its commit id.
	auto := catalogs.WriteTxn{ID: "conform-auto", CommitID: "conform-auto", AutoCommit: true}
	rs = closeStream(t, txnStream(t, in, id, auto, 1000, 10), 10)
	if _, err := commit(ctx, in, id, auto.CommitID, rs); err != nil {
		t.Fatalf("commit of an auto-commit stream: %v", err)
	}
	if n := rows(t, in, id); n != 110 {
		t.Errorf("rows after the auto-commit stream = %d, want 110", n)
	}
}

func (s suite) testTxnDiscard(t *testing.T) {
	in, id := s.setup(t, "txn_discard")
	d, ok := in.Provider.(catalogs.Discarder)
	skipUnless(t, ok, "catalogs.Discarder")
	ctx := context.Background()
	before := s.files(t, in)
	w := catalogs.WriteTxn{ID: "conform-discard", CommitID: "txn-conform-discard"}
	rs := closeStream(t, txnStream(t, in, id, w, 0, 20), 20)
	rs = append(rs, closeStream(t, txnStream(t, in, id, w, 20, 20), 20)...)
	if err := d.Discard(ctx, id, rs); err != nil {
		t.Fatalf("Discard of %s: %v", w.ID, err)
	}
	if err := d.Discard(ctx, id, rs); err != nil {
		t.Errorf("second Discard of %s: %v", w.ID, err)
	}
	if n := rows(t, in, id); n != 0 {
		t.Errorf("rows after Discard = %d, want 0", n)
	}
	s.sameFiles(t, in, "Discard of a transaction's streams", before)
}

func (s suite) testTxnAbort(t *testing.T) {
	in, id := s.setup(t, "txn_abort")
	ctx := context.Background()
	before := s.files(t, in)
	w := catalogs.WriteTxn{ID: "conform-abort", CommitID: "txn-conform-abort"}
	kept := closeStream(t, txnStream(t, in, id, w, 0, 30), 30)
	aborted := txnStream(t, in, id, w, 100, 30)
	if err := aborted.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	_, err := commit(ctx, in, id, w.CommitID, kept)
	n := rows(t, in, id)
	switch {
	case s.cfg.TransactionScoped:
		wantKind(t, "commit of a transaction with an aborted stream", err, catalogs.ErrFailedPrecondition, id.Name)
		if n != 0 {
			t.Errorf("rows after a doomed commit = %d, want 0", n)
		}
	case err == nil && n != 30:
		t.Errorf("rows after committing the stream beside an aborted one = %d, want its 30", n)
	case err != nil:
		// Aborting one stream may doom the unit of work.
		wantKind(t, "commit of a transaction with an aborted stream", err, catalogs.ErrFailedPrecondition, id.Name)
		if n != 0 {
			t.Errorf("rows after a failed commit = %d, want 0", n)
		}
	}
	if err != nil {
		discard(t, in, id, kept)
		s.sameFiles(t, in, "an aborted stream and a failed commit", before)
	}
}

func (s suite) testTxnApart(t *testing.T) {
	in, id := s.setup(t, "txn_apart")
	ctx := context.Background()
	x := catalogs.WriteTxn{ID: "conform-x", CommitID: "txn-conform-x"}
	y := catalogs.WriteTxn{ID: "conform-y", CommitID: "txn-conform-y"}
	sx := txnStream(t, in, id, x, 0, 10)
	sy := txnStream(t, in, id, y, 100, 20)
	rx, ry := closeStream(t, sx, 10), closeStream(t, sy, 20)
	if _, err := commit(ctx, in, id, x.CommitID, rx); err != nil {
		t.Fatalf("commit of %s: %v", x.ID, err)
	}
	if n := rows(t, in, id); n != 10 {
		t.Errorf("rows after committing %s only = %d, want its 10", x.ID, n)
	}
	discard(t, in, id, ry)
	if n := rows(t, in, id); n != 10 {
		t.Errorf("rows after discarding %s = %d, want 10", y.ID, n)
	}
}

// testMultiTable checks CommitTables: both tables land in one call, a
// repeat with the same commit id appends nothing, and FindCommit finds the
// commit on each table.
func (s suite) testMultiTable(t *testing.T) {
	in, a := s.setup(t, "multi_a")
	mc, ok := in.Provider.(catalogs.MultiTableCommitter)
	skipUnless(t, ok, "catalogs.MultiTableCommitter")
	b := createTable(t, in, "multi_b")
	ctx := context.Background()
	tcs := []catalogs.TableCommit{
		{Table: a, Mode: catalogs.ModeAppend, Receipts: []catalogs.WriteReceipt{write(t, in, a, 0, 10)}},
		{Table: b, Mode: catalogs.ModeAppend, Receipts: []catalogs.WriteReceipt{write(t, in, b, 0, 20)}},
	}
	outs, err := mc.CommitTables(ctx, "multi-1", tcs)
	if err != nil {
		t.Fatalf("CommitTables: %v", err)
	}
	if len(outs) != 2 {
		t.Fatalf("CommitTables returned %d outcomes for 2 tables", len(outs))
	}
	if na, nb := rows(t, in, a), rows(t, in, b); na != 10 || nb != 20 {
		t.Fatalf("rows after CommitTables = %d and %d, want 10 and 20", na, nb)
	}
	again, err := mc.CommitTables(ctx, "multi-1", tcs)
	if err != nil {
		t.Fatalf("repeated CommitTables: %v", err)
	}
	if s.cfg.Snapshots && (len(again) != 2 || again[0].SnapshotID != outs[0].SnapshotID || again[1].SnapshotID != outs[1].SnapshotID) {
		t.Errorf("repeated CommitTables = %+v, want the first outcomes %+v", again, outs)
	}
	if na, nb := rows(t, in, a), rows(t, in, b); na != 10 || nb != 20 {
		t.Errorf("rows after a repeated CommitTables = %d and %d, want 10 and 20", na, nb)
	}
	if ic, ok := in.Provider.(catalogs.IdempotentCommitter); ok {
		for _, id := range []catalogs.TableIdent{a, b} {
			if _, found, err := ic.FindCommit(ctx, id, "multi-1"); !found || err != nil {
				t.Errorf("FindCommit(%s, multi-1) = %v, %v; want the multi-table commit", id, found, err)
			}
		}
	}
	// A table that does not exist fails the whole commit: nothing lands.
	missing := catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: "no_such_table"}
	r := write(t, in, a, 100, 5)
	_, err = mc.CommitTables(ctx, "multi-2", []catalogs.TableCommit{
		{Table: a, Mode: catalogs.ModeAppend, Receipts: []catalogs.WriteReceipt{r}},
		{Table: missing, Mode: catalogs.ModeAppend},
	})
	if err == nil || !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("CommitTables with an unknown table = %v, want ErrNotFound", err)
	}
	if na := rows(t, in, a); na != 10 {
		t.Errorf("rows after a failed CommitTables = %d, want 10 (atomic)", na)
	}
	discard(t, in, a, []catalogs.WriteReceipt{r})
}
