package catalogtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

func (s suite) testSpecConcurrent(t *testing.T) {
	in, id := s.setup(t, "spec")
	ctx := context.Background()
	const n = 16
	specs := make([]catalogs.TableSpec, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { specs[i], errs[i] = in.Provider.GetTableSpec(ctx, id) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("GetTableSpec #%d: %v", i, errs[i])
		}
		if !sameSpec(specs[0], specs[i]) {
			t.Errorf("GetTableSpec #%d = %+v, differs from #0 %+v", i, specs[i], specs[0])
		}
	}
	spec := specs[0]
	if spec.Schema == nil || spec.Schema.NumFields() != 2 ||
		spec.Schema.Field(0).Name != "id" || spec.Schema.Field(0).Nullable || spec.Schema.Field(1).Name != "name" {
		t.Fatalf("spec schema = %v; want a required id and a name", spec.Schema)
	}
	// Field metadata, when a backend gives it, describe the same columns.
	if fs := spec.SchemaSpec.Fields; len(fs) > 0 {
		if len(fs) != 2 || fs[0].Name != "id" || fs[0].Nullable || fs[1].Name != "name" {
			t.Errorf("schema spec fields = %+v, want a required id and a name", fs)
		}
	}
	if s.cfg.Snapshots && spec.CurrentSnapshotID != nil {
		t.Errorf("new table has snapshot %d", *spec.CurrentSnapshotID)
	}
	if !s.cfg.FieldIDs {
		return
	}
	fs := spec.SchemaSpec.Fields
	if len(fs) != 2 || fs[0].ID == 0 || fs[1].ID == 0 || fs[0].ID == fs[1].ID {
		t.Fatalf("schema spec fields = %+v, want two distinct non-zero field ids", fs)
	}
	// A commit does not renumber the columns.
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, 0, 3)}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	after, err := in.Provider.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSpecFields(spec, after) {
		t.Errorf("fields after a commit = %+v, were %+v", after.SchemaSpec.Fields, fs)
	}
}

func sameSpecFields(a, b catalogs.TableSpec) bool {
	return slices.EqualFunc(a.SchemaSpec.Fields, b.SchemaSpec.Fields, func(x, y catalogs.FieldMetadata) bool {
		return x.ID == y.ID && x.Name == y.Name && x.Nullable == y.Nullable
	})
}

func sameSpec(a, b catalogs.TableSpec) bool {
	if !a.Schema.Equal(b.Schema) || !sameSpecFields(a, b) {
		return false
	}
	return (a.CurrentSnapshotID == nil) == (b.CurrentSnapshotID == nil) &&
		(a.CurrentSnapshotID == nil || *a.CurrentSnapshotID == *b.CurrentSnapshotID) &&
		a.PartitionSpec.SpecID == b.PartitionSpec.SpecID
}

func (s suite) testInvisibleUntilCommit(t *testing.T) {
	in, id := s.setup(t, "visible")
	r := write(t, in, id, 0, 100)
	if n := rows(t, in, id); n != 0 {
		t.Fatalf("rows before commit = %d, want 0", n)
	}
	// Receipts travel between processes as JSON: commit the decoded copy.
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("receipt JSON: %v", err)
	}
	var back catalogs.WriteReceipt
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("receipt JSON: %v", err)
	}
	out, err := in.Provider.Commit(context.Background(), id, []catalogs.WriteReceipt{back})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := rows(t, in, id); n != 100 {
		t.Fatalf("rows after commit = %d, want 100", n)
	}
	if s.cfg.Snapshots {
		spec, err := in.Provider.GetTableSpec(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if spec.CurrentSnapshotID == nil || *spec.CurrentSnapshotID != out.SnapshotID {
			t.Errorf("current snapshot = %v, want the commit's %d", spec.CurrentSnapshotID, out.SnapshotID)
		}
	}
	if out.CommittedAt.IsZero() {
		t.Error("CommittedAt is zero")
	}
}

func (s suite) testConcurrentCommitters(t *testing.T) {
	// Whether the committers' attempts overlap is up to the scheduler:
	// on a busy machine they may run one after another and none
	// conflicts. A compare-and-swap backend gets up to five rounds, each
	// on a table of its own, to show a retried conflict.
	const rounds = 5
	for r := range rounds {
		name := "concurrent"
		if r > 0 {
			name = fmt.Sprintf("concurrent_%d", r)
		}
		retried := s.concurrentRound(t, name)
		switch {
		case s.cfg.CompareAndSwap && !s.cfg.GroupsCommits && retried == 0:
			if r == rounds-1 {
				t.Errorf("%d concurrent compare-and-swap commits reported no retried conflict in %d rounds", s.h.Committers, rounds)
			}
			continue
		case !s.cfg.CompareAndSwap && retried != 0:
			t.Errorf("a backend that is not compare-and-swap reported %d retried conflicts", retried)
		}
		return
	}
}

// concurrentRound commits one write each of s.h.Committers goroutines
// released at once to a new table name, checks that every commit landed
// once, and returns the conflicts they retried.
func (s suite) concurrentRound(t *testing.T, name string) uint32 {
	in, id := s.setup(t, name)
	ctx := context.Background()
	n := s.h.Committers
	receipts := make([]catalogs.WriteReceipt, n)
	for i := range n {
		receipts[i] = write(t, in, id, int64(i)*1000, 10+int64(i))
	}
	outs := make([]catalogs.CommitOutcome, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			outs[i], errs[i] = in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{receipts[i]})
		})
	}
	close(start)
	wg.Wait()
	var retried uint32
	seen := map[int64]bool{}
	var want int64
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("committer %d: %v", i, errs[i])
		}
		if s.cfg.Snapshots && !s.cfg.GroupsCommits && seen[outs[i].SnapshotID] {
			t.Errorf("committer %d: snapshot %d reported twice", i, outs[i].SnapshotID)
		}
		seen[outs[i].SnapshotID] = true
		retried += outs[i].Retried
		want += 10 + int64(i)
	}
	if got := rows(t, in, id); got != want {
		t.Fatalf("rows = %d, want %d (each commit exactly once)", got, want)
	}
	t.Logf("%s: %d committers, %d snapshots, %d conflicts retried", name, n, len(seen), retried)
	return retried
}

func (s suite) testDiscard(t *testing.T) {
	in, id := s.setup(t, "discard")
	before := s.files(t, in)
	r := write(t, in, id, 0, 50)
	if staged := s.files(t, in); s.cfg.StagesFiles && len(staged) <= len(before) {
		t.Fatalf("WriteBatch staged no file (files before %v, after %v)", before, staged)
	}
	d, ok := in.Provider.(catalogs.Discarder)
	skipUnless(t, ok, "catalogs.Discarder")
	ctx := context.Background()
	if err := d.Discard(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatalf("Discard: %v", err)
	}
	s.sameFiles(t, in, "Discard", before)
	if err := d.Discard(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Errorf("second Discard: %v", err)
	}
	if n := rows(t, in, id); n != 0 {
		t.Errorf("rows after Discard = %d", n)
	}
}

func (s suite) testCommitOnce(t *testing.T) {
	in, id := s.setup(t, "once")
	ic, ok := in.Provider.(catalogs.IdempotentCommitter)
	skipUnless(t, ok, "catalogs.IdempotentCommitter")
	ctx := context.Background()
	r1 := write(t, in, id, 0, 30)
	o1, err := ic.CommitOnce(ctx, id, "commit-1", []catalogs.WriteReceipt{r1})
	if err != nil {
		t.Fatalf("CommitOnce: %v", err)
	}
	o2, err := ic.CommitOnce(ctx, id, "commit-1", []catalogs.WriteReceipt{r1})
	if err != nil {
		t.Fatalf("repeated CommitOnce: %v", err)
	}
	if o2.SnapshotID != o1.SnapshotID {
		t.Errorf("repeated CommitOnce snapshot = %d, want %d", o2.SnapshotID, o1.SnapshotID)
	}
	r2 := write(t, in, id, 100, 5)
	o3, err := ic.CommitOnce(ctx, id, "commit-1", []catalogs.WriteReceipt{r2})
	if err != nil {
		t.Fatalf("CommitOnce with new receipts: %v", err)
	}
	if o3.SnapshotID != o1.SnapshotID {
		t.Errorf("CommitOnce with a landed id committed snapshot %d, want %d", o3.SnapshotID, o1.SnapshotID)
	}
	if n := rows(t, in, id); n != 30 {
		t.Errorf("rows = %d, want 30 (repeats append nothing)", n)
	}
	rec, ok, err := ic.FindCommit(ctx, id, "commit-1")
	if err != nil || !ok {
		t.Fatalf("FindCommit = %v, %v", ok, err)
	}
	if rec.RowCount != 30 || rec.Outcome.SnapshotID != o1.SnapshotID {
		t.Errorf("FindCommit = %+v, want 30 rows in snapshot %d", rec, o1.SnapshotID)
	}
	if _, ok, err := ic.FindCommit(ctx, id, "never"); ok || err != nil {
		t.Errorf("FindCommit(never) = %v, %v; want false, nil", ok, err)
	}
	if d, ok := in.Provider.(catalogs.Discarder); ok {
		if err := d.Discard(ctx, id, []catalogs.WriteReceipt{r2}); err != nil {
			t.Errorf("Discard unused receipt: %v", err)
		}
	}
}

func (s suite) testOverwrite(t *testing.T) {
	in, id := s.setup(t, "overwrite")
	ow, ok := in.Provider.(catalogs.Overwriter)
	skipUnless(t, ok, "catalogs.Overwriter")
	ctx := context.Background()
	for i := range 2 {
		if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, int64(i)*100, 20)}); err != nil {
			t.Fatal(err)
		}
	}
	replacing := write(t, in, id, 1000, 7)
	if s.cfg.ReplacesInStream {
		_, err := ow.CommitOverwrite(ctx, id, "replace-0", []catalogs.WriteReceipt{replacing})
		wantKind(t, "CommitOverwrite of an appending stream's receipts", err, catalogs.ErrFailedPrecondition, id.Name)
		discard(t, in, id, []catalogs.WriteReceipt{replacing})
		replacing = replaceStream(t, in, id, 1000, 7)
	}
	if _, err := ow.CommitOverwrite(ctx, id, "replace-1", []catalogs.WriteReceipt{replacing}); err != nil {
		t.Fatalf("CommitOverwrite: %v", err)
	}
	if n := rows(t, in, id); n != 7 {
		t.Errorf("rows after overwrite = %d, want 7", n)
	}
}

// replaceStream writes n rows from from with a stream opened to replace
// the table (catalogs.WriteTxn.Replace) and returns its receipt.
func replaceStream(t *testing.T, in *Instance, id catalogs.TableIdent, from, n int64) catalogs.WriteReceipt {
	t.Helper()
	sw, ok := in.Provider.(catalogs.StreamWriter)
	if !ok {
		t.Fatal("Config.ReplacesInStream requires a catalogs.StreamWriter")
	}
	ctx := context.Background()
	w := unit("replace-" + id.Name)
	w.Replace = true
	ws, err := sw.OpenStream(ctx, id, w)
	if err != nil {
		t.Fatalf("OpenStream to replace: %v", err)
	}
	b := Batch(from, n)
	defer b.Release()
	if err := ws.Write(ctx, b); err != nil {
		t.Fatalf("Write: %v", err)
	}
	rs, err := ws.Close(ctx)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Close: %v %v", rs, err)
	}
	return rs[0]
}

// unit is the unit of work of one auto-commit stream, named name.
func unit(name string) catalogs.WriteTxn {
	return catalogs.WriteTxn{ID: name, CommitID: name, AutoCommit: true}
}

func (s suite) testStream(t *testing.T) {
	in, id := s.setup(t, "stream")
	sw, ok := in.Provider.(catalogs.StreamWriter)
	skipUnless(t, ok, "catalogs.StreamWriter")
	ctx := context.Background()
	before := s.files(t, in)
	ws, err := sw.OpenStream(ctx, id, unit("stream-1"))
	if err != nil {
		t.Fatalf("OpenStream: %v", err)
	}
	for i := range 10 {
		b := Batch(int64(i)*100, 100)
		err := ws.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatalf("Write #%d: %v", i, err)
		}
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	var total uint64
	for _, r := range rs {
		total += r.RowCount
	}
	if total != 1000 {
		t.Fatalf("stream receipts hold %d rows, want 1000", total)
	}
	if s.cfg.Layout == LayoutOneFilePerBucket {
		if len(rs) != 1 {
			t.Errorf("10 small batches became %d receipts, want 1 file", len(rs))
		}
		if staged := s.files(t, in); s.cfg.StagesFiles && len(staged) != len(before)+1 {
			t.Errorf("10 small batches staged %d files, want 1", len(staged)-len(before))
		}
	}
	if _, err := in.Provider.Commit(ctx, id, rs); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := rows(t, in, id); n != 1000 {
		t.Errorf("rows = %d, want 1000", n)
	}

	// An aborted stream leaves nothing staged and nothing visible.
	before = s.files(t, in)
	ws, err = sw.OpenStream(ctx, id, unit("stream-aborted"))
	if err != nil {
		t.Fatal(err)
	}
	b := Batch(0, 10)
	defer b.Release()
	if err := ws.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := ws.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	s.sameFiles(t, in, "Abort", before)
	if err := ws.Abort(ctx); err != nil {
		t.Errorf("second Abort: %v", err)
	}
	if n := rows(t, in, id); n != 1000 {
		t.Errorf("rows after an aborted stream = %d, want 1000", n)
	}
	bad := badBatch(t, "extra")
	defer bad.Release()
	ws, err = sw.OpenStream(ctx, id, unit("stream-bad"))
	if err != nil {
		t.Fatal(err)
	}
	// A stream into a remote transaction may learn of the fault only when
	// it ends: at Write or at Close, never not at all.
	err = ws.Write(ctx, bad)
	what := "stream Write with an extra column"
	if err == nil {
		_, err = ws.Close(ctx)
		what = "stream Close after a Write with an extra column"
	}
	wantKind(t, what, err, catalogs.ErrInvalidArgument, "extra")
	_ = ws.Abort(ctx)
	if n := rows(t, in, id); n != 1000 {
		t.Errorf("rows after a stream with an extra column = %d, want 1000", n)
	}
}

// badBatch builds a batch that breaks the table schema in the named way.
func badBatch(t *testing.T, how string) arrow.RecordBatch {
	t.Helper()
	mem := memory.DefaultAllocator
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	names := array.NewStringBuilder(mem)
	defer names.Release()
	ids.AppendValues([]int64{1, 2}, nil)
	names.AppendValues([]string{"a", "b"}, nil)
	idF := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	nameF := arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}
	idA, nameA := ids.NewArray(), names.NewArray()
	defer idA.Release()
	defer nameA.Release()
	switch how {
	case "extra":
		extra := array.NewInt64Builder(mem)
		defer extra.Release()
		extra.AppendValues([]int64{1, 2}, nil)
		ea := extra.NewArray()
		defer ea.Release()
		sc := arrow.NewSchema([]arrow.Field{idF, nameF, {Name: "extra", Type: arrow.PrimitiveTypes.Int64}}, nil)
		return array.NewRecordBatch(sc, []arrow.Array{idA, nameA, ea}, 2)
	case "missing":
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{nameF}, nil), []arrow.Array{nameA}, 2)
	case "mistyped":
		s := array.NewStringBuilder(mem)
		defer s.Release()
		s.AppendValues([]string{"1", "2"}, nil)
		sa := s.NewArray()
		defer sa.Release()
		sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, nameF}, nil)
		return array.NewRecordBatch(sc, []arrow.Array{sa, nameA}, 2)
	case "null":
		nb := array.NewInt64Builder(mem)
		defer nb.Release()
		nb.AppendValues([]int64{1, 0}, []bool{true, false})
		na := nb.NewArray()
		defer na.Release()
		sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, nameF}, nil)
		return array.NewRecordBatch(sc, []arrow.Array{na, nameA}, 2)
	}
	t.Fatalf("unknown bad batch %q", how)
	return nil
}

func (s suite) testBadInput(t *testing.T) {
	in, id := s.setup(t, "bad")
	ctx := context.Background()
	p := in.Provider
	missing := catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: "no_such_table"}
	_, err := p.GetTableSpec(ctx, missing)
	wantKind(t, "GetTableSpec(unknown)", err, catalogs.ErrNotFound, "no_such_table")
	good := Batch(0, 3)
	defer good.Release()
	_, err = p.WriteBatch(ctx, missing, good)
	wantKind(t, "WriteBatch(unknown)", err, catalogs.ErrNotFound, "no_such_table")
	_, err = p.GetTableSpec(ctx, catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace})
	wantKind(t, "GetTableSpec(empty name)", err, catalogs.ErrInvalidArgument)
	_, err = p.WriteBatch(ctx, catalogs.TableIdent{Catalog: in.Catalog, Name: "x"}, good)
	wantKind(t, "WriteBatch(empty namespace)", err, catalogs.ErrInvalidArgument)
	for how, col := range map[string]string{"extra": "extra", "missing": "id", "mistyped": "id", "null": "id"} {
		b := badBatch(t, how)
		_, err := p.WriteBatch(ctx, id, b)
		b.Release()
		wantKind(t, "WriteBatch("+how+" column)", err, catalogs.ErrInvalidArgument, col, id.Name)
	}
	_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{{Metadata: []byte(`{"not":"a receipt"}`)}})
	wantKind(t, "Commit(foreign receipt)", err, catalogs.ErrInvalidArgument)
	if n := rows(t, in, id); n != 0 {
		t.Errorf("rows after bad input = %d", n)
	}
}

func (s suite) testCreateAndDrop(t *testing.T) {
	in, id := s.setup(t, "created")
	tm, ok := in.Provider.(catalogs.TableManager)
	skipUnless(t, ok, "catalogs.TableManager")
	ctx := context.Background()
	_, err := tm.CreateTable(ctx, id, Schema, nil)
	wantKind(t, "CreateTable(existing)", err, catalogs.ErrAlreadyExists, id.Name)
	if s.cfg.UnstorableType != nil {
		odd := arrow.NewSchema([]arrow.Field{
			{Name: "ok", Type: arrow.PrimitiveTypes.Int32},
			{Name: "span", Type: s.cfg.UnstorableType, Nullable: true},
		}, nil)
		other := id
		other.Name = "odd"
		_, err = tm.CreateTable(ctx, other, odd, nil)
		wantKind(t, "CreateTable(column of type "+s.cfg.UnstorableType.String()+")", err, catalogs.ErrInvalidArgument, "span")
	}
	if l, ok := in.Provider.(catalogs.Lister); ok {
		tables, err := l.ListTables(ctx, in.Namespace)
		if err != nil {
			t.Fatalf("ListTables: %v", err)
		}
		if !slices.ContainsFunc(tables, func(x catalogs.TableIdent) bool { return x.Name == id.Name }) {
			t.Errorf("ListTables = %v, want %s among them", tables, id)
		}
		nss, err := l.ListNamespaces(ctx)
		if err != nil {
			t.Fatalf("ListNamespaces: %v", err)
		}
		if !slices.ContainsFunc(nss, func(ns []string) bool { return slices.Equal(ns, in.Namespace) }) {
			t.Errorf("ListNamespaces = %v, want %v among them", nss, in.Namespace)
		}
	}
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, 0, 5)}); err != nil {
		t.Fatal(err)
	}
	if err := tm.DropTable(ctx, id); err != nil {
		t.Fatalf("DropTable: %v", err)
	}
	_, err = in.Provider.GetTableSpec(ctx, id)
	wantKind(t, "GetTableSpec(dropped)", err, catalogs.ErrNotFound, id.Name)
	wantKind(t, "DropTable(dropped)", tm.DropTable(ctx, id), catalogs.ErrNotFound, id.Name)
}

// testUncreator: DropUnwritten keeps a table a commit has landed on, and
// a table it drops is gone: found by no one, created again by the next
// create, and written to as a new table.
func (s suite) testUncreator(t *testing.T) {
	in, id := s.setup(t, "uncreated")
	u, ok := in.Provider.(catalogs.Uncreator)
	skipUnless(t, ok, "catalogs.Uncreator")
	tm, ok := in.Provider.(catalogs.TableManager)
	skipUnless(t, ok, "catalogs.TableManager")
	ctx := context.Background()
	written := createTable(t, in, "uncreated_written")
	if _, err := in.Provider.Commit(ctx, written, []catalogs.WriteReceipt{write(t, in, written, 0, 5)}); err != nil {
		t.Fatal(err)
	}
	if dropped, err := u.DropUnwritten(ctx, written); err != nil || dropped {
		t.Fatalf("DropUnwritten(table with a commit) = %v, %v; want kept", dropped, err)
	}
	if n := rows(t, in, written); n != 5 {
		t.Errorf("rows of the kept table = %d, want 5", n)
	}
	dropped, err := u.DropUnwritten(ctx, id)
	if err != nil {
		t.Fatalf("DropUnwritten(fresh table): %v", err)
	}
	if !dropped {
		if s.cfg.DropsUnwritten {
			t.Fatal("DropUnwritten(fresh table) kept it; Config.DropsUnwritten is declared")
		}
		return
	}
	_, err = in.Provider.GetTableSpec(ctx, id)
	wantKind(t, "GetTableSpec(dropped unwritten)", err, catalogs.ErrNotFound, id.Name)
	if _, err := tm.CreateTable(ctx, id, Schema, nil); err != nil {
		t.Fatalf("CreateTable after DropUnwritten: %v", err)
	}
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, 10, 3)}); err != nil {
		t.Fatalf("Commit after DropUnwritten and CreateTable: %v", err)
	}
	if n := rows(t, in, id); n != 3 {
		t.Errorf("rows of the new table = %d, want 3", n)
	}
}

// testTableOptions: an option a backend does not take is refused naming
// it, never ignored, and the refused create leaves no table.
func (s suite) testTableOptions(t *testing.T) {
	in, id := s.setup(t, "optioned")
	oc, ok := in.Provider.(catalogs.TableManager)
	skipUnless(t, ok, "catalogs.TableManager")
	ctx := context.Background()
	other := id
	other.Name = "unoptioned"
	const bogus = "flightgw-test.no-such-option"
	_, err := oc.CreateTable(ctx, other, Schema, map[string]string{bogus: "1"})
	wantKind(t, "CreateTable(unknown option)", err, catalogs.ErrInvalidArgument, bogus)
	wantKind(t, "CheckTableOptions(unknown option)", oc.CheckTableOptions(id, Schema, map[string]string{bogus: "1"}), catalogs.ErrInvalidArgument, bogus)
	if err := oc.CheckTableOptions(id, Schema, nil); err != nil {
		t.Errorf("CheckTableOptions(no options) = %v", err)
	}
	_, err = in.Provider.GetTableSpec(ctx, other)
	wantKind(t, "GetTableSpec(after a refused create)", err, catalogs.ErrNotFound, other.Name)
	_, err = oc.CreateTable(ctx, id, Schema, nil)
	wantKind(t, "CreateTable(existing)", err, catalogs.ErrAlreadyExists, id.Name)
}

func (s suite) testScan(t *testing.T) {
	in, id := s.setup(t, "scanned")
	sc, ok := in.Provider.(catalogs.Scanner)
	skipUnless(t, ok, "catalogs.Scanner")
	ctx := context.Background()
	for i := range 3 {
		if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, int64(i)*100, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := sc.Scan(ctx, id, catalogs.ScanRequest{
		Columns: []string{"name", "id"},
		Filters: []catalogs.Filter{{Column: "id", Op: catalogs.OpGtEq, Values: []any{int64(250)}}},
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	defer res.Reader.Release()
	if got := res.Reader.Schema(); got.NumFields() != 2 || got.Field(0).Name != "name" || got.Field(1).Name != "id" {
		t.Errorf("projection [name id] gave schema %v: columns must come in the requested order", got)
	}
	matching := 0
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		if !b.Schema().Equal(res.Reader.Schema()) {
			t.Errorf("batch schema %v differs from the reader's %v", b.Schema(), res.Reader.Schema())
		}
		ids, ok := b.Column(1).(*array.Int64)
		if !ok {
			t.Fatalf("column id is %s", b.Column(1).DataType())
		}
		for _, v := range ids.Int64Values() {
			if v >= 250 {
				matching++
			}
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatal(err)
	}
	if matching != 50 {
		t.Errorf("scan with id >= 250 returned %d matching rows, want 50", matching)
	}
	if (s.cfg.StagesFiles && res.FilesTotal < 1) || res.FilesPlanned > res.FilesTotal {
		t.Errorf("files planned %d of %d", res.FilesPlanned, res.FilesTotal)
	}
	_, err = sc.Scan(ctx, id, catalogs.ScanRequest{Columns: []string{"missing"}})
	wantKind(t, "Scan(unknown column)", err, catalogs.ErrInvalidArgument, "missing")
}
