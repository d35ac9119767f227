package catalogtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// Harness tells the suite how to build and inspect one backend.
type Harness struct {
	// New returns a fresh, empty backend for one subtest. It registers its
	// own cleanup with t.Cleanup.
	New func(t *testing.T) *Instance
	// Committers is the number of concurrent committers (default 8).
	Committers int
	// GroupsCommits says the backend may merge concurrent commits of one
	// table into one snapshot (group commit): concurrent committers may
	// then share a snapshot and retry no conflict.
	GroupsCommits bool
}

// Instance is one backend under test.
type Instance struct {
	Provider catalogs.Provider
	// Catalog and Namespace locate the tables the suite creates; the
	// namespace must exist.
	Catalog   string
	Namespace []string
	// ListFiles returns every file under the backend's storage, so the
	// suite can prove that nothing staged is left behind.
	ListFiles func(ctx context.Context) ([]string, error)
	// CreateTable creates a table when the provider is no TableManager.
	CreateTable func(ctx context.Context, table catalogs.TableIdent, schema *arrow.Schema) error
	// CountRows counts a table's visible rows when the provider is no
	// Scanner.
	CountRows func(ctx context.Context, table catalogs.TableIdent) (int64, error)
}

// Run runs every conformance check against the backend h builds.
func Run(t *testing.T, h Harness) {
	if h.Committers == 0 {
		h.Committers = 8
	}
	checks := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"GetTableSpecConcurrent", testSpecConcurrent},
		{"InvisibleUntilCommit", testInvisibleUntilCommit},
		{"ConcurrentCommitters", testConcurrentCommitters},
		{"Discard", testDiscard},
		{"CommitOnce", testCommitOnce},
		{"Overwrite", testOverwrite},
		{"Stream", testStream},
		{"Scan", testScan},
		{"BadInput", testBadInput},
		{"CreateAndDrop", testCreateAndDrop},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// Schema is the table schema the suite writes: a required id and an
// optional name.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// Batch builds rows ids [from, from+n) of Schema.
func Batch(from, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
	}
	return b.NewRecordBatch()
}

// setup builds an instance and a fresh table named name.
func setup(t *testing.T, h Harness, name string) (*Instance, catalogs.TableIdent) {
	t.Helper()
	in := h.New(t)
	id := catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: name}
	ctx := context.Background()
	if tm, ok := in.Provider.(catalogs.TableManager); ok {
		if _, err := tm.CreateTable(ctx, id, Schema); err != nil {
			t.Fatalf("CreateTable(%s): %v", id, err)
		}
	} else if in.CreateTable != nil {
		if err := in.CreateTable(ctx, id, Schema); err != nil {
			t.Fatalf("harness CreateTable(%s): %v", id, err)
		}
	} else {
		t.Fatal("the backend is no TableManager and the harness has no CreateTable")
	}
	return in, id
}

// rows counts the visible rows of a table.
func rows(t *testing.T, in *Instance, id catalogs.TableIdent) int64 {
	t.Helper()
	ctx := context.Background()
	if in.CountRows != nil {
		n, err := in.CountRows(ctx, id)
		if err != nil {
			t.Fatalf("CountRows(%s): %v", id, err)
		}
		return n
	}
	sc, ok := in.Provider.(catalogs.Scanner)
	if !ok {
		t.Fatal("the backend is no Scanner and the harness has no CountRows")
	}
	res, err := sc.Scan(ctx, id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatalf("Scan(%s): %v", id, err)
	}
	defer res.Reader.Release()
	var n int64
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatalf("Scan(%s) reader: %v", id, err)
	}
	return n
}

func write(t *testing.T, in *Instance, id catalogs.TableIdent, from, n int64) catalogs.WriteReceipt {
	t.Helper()
	b := Batch(from, n)
	defer b.Release()
	r, err := in.Provider.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatalf("WriteBatch(%s): %v", id, err)
	}
	if r.RowCount != uint64(n) {
		t.Fatalf("WriteBatch(%s) receipt rows = %d, want %d", id, r.RowCount, n)
	}
	return r
}

func files(t *testing.T, in *Instance) []string {
	t.Helper()
	fs, err := in.ListFiles(context.Background())
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	slices.Sort(fs)
	return fs
}

// wantKind checks err wraps kind and names every word in names.
func wantKind(t *testing.T, what string, err, kind error, names ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %v", what, kind)
		return
	}
	if !errors.Is(err, kind) {
		t.Errorf("%s: error %q is not %v", what, err, kind)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: error %q does not name %q", what, err, n)
		}
	}
	if msg := err.Error(); msg != "" && msg[0] >= 'A' && msg[0] <= 'Z' {
		t.Errorf("%s: error %q does not start in lower case", what, msg)
	}
}

func testSpecConcurrent(t *testing.T, h Harness) {
	in, id := setup(t, h, "spec")
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
	s := specs[0]
	if s.Schema == nil || s.Schema.NumFields() != 2 || len(s.SchemaSpec.Fields) != 2 {
		t.Fatalf("spec schema = %v, fields %+v; want id and name", s.Schema, s.SchemaSpec.Fields)
	}
	if f := s.SchemaSpec.Fields[0]; f.Name != "id" || f.Nullable || f.ID == 0 {
		t.Errorf("field 0 = %+v, want required id with an id", f)
	}
	if s.CurrentSnapshotID != nil {
		t.Errorf("new table has snapshot %d", *s.CurrentSnapshotID)
	}
}

func sameSpec(a, b catalogs.TableSpec) bool {
	if !a.Schema.Equal(b.Schema) || len(a.SchemaSpec.Fields) != len(b.SchemaSpec.Fields) {
		return false
	}
	for i := range a.SchemaSpec.Fields {
		x, y := a.SchemaSpec.Fields[i], b.SchemaSpec.Fields[i]
		if x.ID != y.ID || x.Name != y.Name || x.Nullable != y.Nullable {
			return false
		}
	}
	return (a.CurrentSnapshotID == nil) == (b.CurrentSnapshotID == nil) &&
		(a.CurrentSnapshotID == nil || *a.CurrentSnapshotID == *b.CurrentSnapshotID) &&
		a.PartitionSpec.SpecID == b.PartitionSpec.SpecID
}

func testInvisibleUntilCommit(t *testing.T, h Harness) {
	in, id := setup(t, h, "visible")
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
	spec, err := in.Provider.GetTableSpec(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if spec.CurrentSnapshotID == nil || *spec.CurrentSnapshotID != out.SnapshotID {
		t.Errorf("current snapshot = %v, want the commit's %d", spec.CurrentSnapshotID, out.SnapshotID)
	}
	if out.CommittedAt.IsZero() {
		t.Error("CommittedAt is zero")
	}
}

func testConcurrentCommitters(t *testing.T, h Harness) {
	in, id := setup(t, h, "concurrent")
	ctx := context.Background()
	n := h.Committers
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
		if seen[outs[i].SnapshotID] && !h.GroupsCommits {
			t.Errorf("committer %d: snapshot %d reported twice", i, outs[i].SnapshotID)
		}
		seen[outs[i].SnapshotID] = true
		retried += outs[i].Retried
		want += 10 + int64(i)
	}
	if got := rows(t, in, id); got != want {
		t.Fatalf("rows = %d, want %d (each commit exactly once)", got, want)
	}
	if retried == 0 && !h.GroupsCommits {
		t.Errorf("%d concurrent commits reported no retried conflict", n)
	}
	t.Logf("%d committers, %d snapshots, %d conflicts retried", n, len(seen), retried)
}

func testDiscard(t *testing.T, h Harness) {
	in, id := setup(t, h, "discard")
	before := files(t, in)
	r := write(t, in, id, 0, 50)
	staged := files(t, in)
	if len(staged) <= len(before) {
		t.Fatalf("WriteBatch staged no file (files before %v, after %v)", before, staged)
	}
	d, ok := in.Provider.(catalogs.Discarder)
	if !ok {
		t.Skip("the backend is no Discarder")
	}
	ctx := context.Background()
	if err := d.Discard(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatalf("Discard: %v", err)
	}
	if after := files(t, in); !slices.Equal(after, before) {
		t.Errorf("files after Discard = %v, want %v", after, before)
	}
	if err := d.Discard(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Errorf("second Discard: %v", err)
	}
	if n := rows(t, in, id); n != 0 {
		t.Errorf("rows after Discard = %d", n)
	}
}

func testCommitOnce(t *testing.T, h Harness) {
	in, id := setup(t, h, "once")
	ic, ok := in.Provider.(catalogs.IdempotentCommitter)
	if !ok {
		t.Skip("the backend is no IdempotentCommitter")
	}
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

func testOverwrite(t *testing.T, h Harness) {
	in, id := setup(t, h, "overwrite")
	ow, ok := in.Provider.(catalogs.Overwriter)
	if !ok {
		t.Skip("the backend is no Overwriter")
	}
	ctx := context.Background()
	for i := range 2 {
		if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, int64(i)*100, 20)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ow.CommitOverwrite(ctx, id, "replace-1", []catalogs.WriteReceipt{write(t, in, id, 1000, 7)}); err != nil {
		t.Fatalf("CommitOverwrite: %v", err)
	}
	if n := rows(t, in, id); n != 7 {
		t.Errorf("rows after overwrite = %d, want 7", n)
	}
}

func testStream(t *testing.T, h Harness) {
	in, id := setup(t, h, "stream")
	sw, ok := in.Provider.(catalogs.StreamWriter)
	if !ok {
		t.Skip("the backend is no StreamWriter")
	}
	ctx := context.Background()
	s, err := sw.OpenStream(ctx, id)
	if err != nil {
		t.Fatalf("OpenStream: %v", err)
	}
	for i := range 10 {
		b := Batch(int64(i)*100, 100)
		err := s.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatalf("Write #%d: %v", i, err)
		}
	}
	rs, err := s.Close(ctx)
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
	if len(rs) != 1 {
		t.Errorf("10 small batches became %d files, want 1", len(rs))
	}
	if _, err := in.Provider.Commit(ctx, id, rs); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := rows(t, in, id); n != 1000 {
		t.Errorf("rows = %d, want 1000", n)
	}

	// An aborted stream leaves nothing staged.
	before := files(t, in)
	s, err = sw.OpenStream(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch(0, 10)
	defer b.Release()
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if after := files(t, in); !slices.Equal(after, before) {
		t.Errorf("files after Abort = %v, want %v", after, before)
	}
	bad := badBatch(t, "extra")
	defer bad.Release()
	s, err = sw.OpenStream(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantKind(t, "stream Write with an extra column", s.Write(ctx, bad), catalogs.ErrInvalidArgument, "extra")
	_ = s.Abort(ctx)
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

func testBadInput(t *testing.T, h Harness) {
	in, id := setup(t, h, "bad")
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

func testCreateAndDrop(t *testing.T, h Harness) {
	in, id := setup(t, h, "created")
	tm, ok := in.Provider.(catalogs.TableManager)
	if !ok {
		t.Skip("the backend is no TableManager")
	}
	ctx := context.Background()
	_, err := tm.CreateTable(ctx, id, Schema)
	wantKind(t, "CreateTable(existing)", err, catalogs.ErrAlreadyExists, id.Name)
	odd := arrow.NewSchema([]arrow.Field{
		{Name: "ok", Type: arrow.PrimitiveTypes.Int32},
		{Name: "span", Type: arrow.FixedWidthTypes.MonthInterval},
	}, nil)
	other := id
	other.Name = "odd"
	_, err = tm.CreateTable(ctx, other, odd)
	wantKind(t, "CreateTable(interval column)", err, catalogs.ErrInvalidArgument, "span")
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

func testScan(t *testing.T, h Harness) {
	in, id := setup(t, h, "scanned")
	sc, ok := in.Provider.(catalogs.Scanner)
	if !ok {
		t.Skip("the backend is no Scanner")
	}
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
	if res.FilesTotal < 1 || res.FilesPlanned > res.FilesTotal {
		t.Errorf("files planned %d of %d", res.FilesPlanned, res.FilesTotal)
	}
	_, err = sc.Scan(ctx, id, catalogs.ScanRequest{Columns: []string{"missing"}})
	wantKind(t, "Scan(unknown column)", err, catalogs.ErrInvalidArgument, "missing")
}
