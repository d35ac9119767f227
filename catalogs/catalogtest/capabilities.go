package catalogtest

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// ReplaceSchema is the schema testSchemaReplacer replaces the suite's
// table with: id kept, name dropped, two new columns.
var ReplaceSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// replaceBatch builds rows ids [from, from+n) of ReplaceSchema.
func replaceBatch(from, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, ReplaceSchema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("label-%d", i))
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
	}
	return b.NewRecordBatch()
}

// fieldNames lists a schema's column names.
func fieldNames(s *arrow.Schema) []string {
	if s == nil {
		return nil
	}
	out := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// testSchemaReplacer: a replace stream under another schema stages
// invisibly (readers keep the old table and schema), and its overwrite
// commit makes both the new data and the new schema current in one step,
// keeping the columns' identity; the table then takes writes in the new
// schema. An unstorable column type is refused naming the column.
func (s suite) testSchemaReplacer(t *testing.T) {
	in, id := s.setup(t, "replaced")
	sr, ok := in.Provider.(catalogs.SchemaReplacer)
	skipUnless(t, ok, "catalogs.SchemaReplacer")
	ow, ok := in.Provider.(catalogs.Overwriter)
	if !ok {
		t.Fatal("the backend is a catalogs.SchemaReplacer but no catalogs.Overwriter: its receipts could never commit")
	}
	ctx := context.Background()
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, 0, 20)}); err != nil {
		t.Fatal(err)
	}
	before, err := in.Provider.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sr.OpenReplaceStream(ctx, id, ReplaceSchema)
	if err != nil {
		t.Fatalf("OpenReplaceStream: %v", err)
	}
	b := replaceBatch(1000, 7)
	err = ws.Write(ctx, b)
	b.Release()
	if err != nil {
		_ = ws.Abort(ctx)
		t.Fatalf("replace stream Write: %v", err)
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		t.Fatalf("replace stream Close: %v", err)
	}
	staged, err := in.Provider.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(staged.Schema); !slices.Equal(got, fieldNames(Schema)) {
		t.Errorf("columns before the replace commits = %v, want the old %v", got, fieldNames(Schema))
	}
	if n := rows(t, in, id); n != 20 {
		t.Errorf("rows before the replace commits = %d, want the old 20", n)
	}
	if _, err := ow.CommitOverwrite(ctx, id, "replace-schema-1", rs); err != nil {
		t.Fatalf("CommitOverwrite of the replace stream's receipts: %v", err)
	}
	after, err := in.Provider.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(after.Schema); !slices.Equal(got, fieldNames(ReplaceSchema)) {
		t.Fatalf("columns after the replace = %v, want %v", got, fieldNames(ReplaceSchema))
	}
	for i, f := range ReplaceSchema.Fields() {
		if g := after.Schema.Field(i); !arrow.TypeEqual(g.Type, f.Type) {
			t.Errorf("column %s after the replace is %s, want %s", f.Name, g.Type, f.Type)
		}
	}
	if s.cfg.FieldIDs && len(before.SchemaSpec.Fields) > 0 && len(after.SchemaSpec.Fields) > 0 &&
		after.SchemaSpec.Fields[0].ID != before.SchemaSpec.Fields[0].ID {
		t.Errorf("column id kept by the replace has field id %d, was %d", after.SchemaSpec.Fields[0].ID, before.SchemaSpec.Fields[0].ID)
	}
	if n := rows(t, in, id); n != 7 {
		t.Errorf("rows after the replace = %d, want 7", n)
	}
	// The table is the new one for the next writer.
	nb := replaceBatch(2000, 3)
	r, err := in.Provider.WriteBatch(ctx, id, nb)
	nb.Release()
	if err != nil {
		t.Fatalf("WriteBatch in the replaced schema: %v", err)
	}
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatalf("Commit in the replaced schema: %v", err)
	}
	if n := rows(t, in, id); n != 10 {
		t.Errorf("rows after a write in the replaced schema = %d, want 10", n)
	}
	if s.cfg.UnstorableType != nil {
		odd := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "span", Type: s.cfg.UnstorableType, Nullable: true},
		}, nil)
		ws, err := sr.OpenReplaceStream(ctx, id, odd)
		if err == nil {
			_ = ws.Abort(ctx)
		}
		wantKind(t, "OpenReplaceStream(column of type "+s.cfg.UnstorableType.String()+")", err, catalogs.ErrInvalidArgument, "span")
	}
}

// testReclaimer: a reclaim deletes the staged files nothing committed
// once they are older than MinAge, and nothing else: not a younger file,
// not one a live unit of work holds (ReclaimOptions.Held), not one a
// snapshot references; a dry run reports the orphans and deletes none; a
// MinAge that is not positive is refused.
func (s suite) testReclaimer(t *testing.T) {
	in, id := s.setup(t, "reclaimed")
	rc, ok := in.Provider.(catalogs.Reclaimer)
	skipUnless(t, ok, "catalogs.Reclaimer")
	if !s.cfg.StagesFiles {
		t.Fatal("the backend is a catalogs.Reclaimer, which deletes files, but does not declare Config.StagesFiles: the suite cannot see what it deletes")
	}
	ctx := context.Background()
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, 0, 20)}); err != nil {
		t.Fatal(err)
	}
	committed := s.files(t, in)
	_ = write(t, in, id, 100, 5) // its writer dies: an orphan
	withOrphan := s.files(t, in)
	held := write(t, in, id, 200, 6)
	all := s.files(t, in)
	orphans, heldFiles := added(committed, withOrphan), added(withOrphan, all)
	if len(orphans) == 0 || len(heldFiles) == 0 {
		t.Fatalf("WriteBatch staged no file (orphan %v, held %v)", orphans, heldFiles)
	}
	holds := func(_ context.Context, tbl catalogs.TableIdent) []catalogs.WriteReceipt {
		if tbl.Key() == id.Key() {
			return []catalogs.WriteReceipt{held}
		}
		return nil
	}
	// Every file is older than minAge once the clock has moved past it.
	const minAge = 50 * time.Millisecond
	time.Sleep(2 * minAge)

	_, err := rc.Reclaim(ctx, catalogs.ReclaimOptions{Held: holds})
	wantKind(t, "Reclaim(no MinAge)", err, catalogs.ErrInvalidArgument)
	s.sameFiles(t, in, "Reclaim(no MinAge)", all)

	rep, err := rc.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Hour, Held: holds})
	if err != nil {
		t.Fatalf("Reclaim(MinAge 1h): %v", err)
	}
	s.sameFiles(t, in, "Reclaim of files younger than MinAge", all)
	if rep.Files() != 0 {
		t.Errorf("Reclaim(MinAge 1h) reports %d files deleted, want 0", rep.Files())
	}

	rep, err = rc.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: minAge, DryRun: true, Held: holds})
	if err != nil {
		t.Fatalf("Reclaim(dry run): %v", err)
	}
	s.sameFiles(t, in, "a dry-run Reclaim", all)
	for _, f := range orphans {
		if !slices.ContainsFunc(rep.Orphans, func(o string) bool { return path.Base(o) == path.Base(f) }) {
			t.Errorf("dry-run Reclaim orphans %v do not name the orphan %s", rep.Orphans, f)
		}
	}
	for _, f := range heldFiles {
		if slices.ContainsFunc(rep.Orphans, func(o string) bool { return path.Base(o) == path.Base(f) }) {
			t.Errorf("dry-run Reclaim would delete the held file %s", f)
		}
	}

	rep, err = rc.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: minAge, Held: holds})
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	left := s.files(t, in)
	for _, f := range orphans {
		if slices.Contains(left, f) {
			t.Errorf("Reclaim kept the orphan %s", f)
		}
	}
	for _, f := range append(slices.Clone(committed), heldFiles...) {
		if !slices.Contains(left, f) {
			t.Errorf("Reclaim deleted %s, which a snapshot references or a live unit of work holds", f)
		}
	}
	if deleted := len(all) - len(left); rep.Files() != deleted {
		t.Errorf("Reclaim reports %d files deleted, %d were", rep.Files(), deleted)
	}
	if n := rows(t, in, id); n != 20 {
		t.Errorf("rows after Reclaim = %d, want 20", n)
	}
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{held}); err != nil {
		t.Fatalf("Commit of the held receipt after Reclaim: %v", err)
	}
	if n := rows(t, in, id); n != 26 {
		t.Errorf("rows after committing the held receipt = %d, want 26", n)
	}
}

// added lists the files of after that are not in before (both sorted).
func added(before, after []string) []string {
	var out []string
	for _, f := range after {
		if _, found := slices.BinarySearch(before, f); !found {
			out = append(out, f)
		}
	}
	return out
}

// testQueryPusher: a pushed query runs on the committed data and streams
// its result in the query's Schema (the engine's typing, which the client
// was told), column by column; a result with another number of columns is
// an error, never a misaligned answer.
func (s suite) testQueryPusher(t *testing.T) {
	in, id := s.setup(t, "pushed")
	qp, ok := in.Provider.(catalogs.QueryPusher)
	skipUnless(t, ok, "catalogs.QueryPusher")
	ctx := context.Background()
	for i := range 3 {
		if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, int64(i)*100, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	tables := []catalogs.TableIdent{id}
	projected := arrow.NewSchema([]arrow.Field{
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	got := pushed(t, qp, catalogs.PushedQuery{Fragments: []string{"SELECT name, id FROM ", " WHERE id >= 250"}, Tables: tables, Schema: projected})
	n := 0
	for _, b := range got {
		names, ok1 := b.Column(0).(*array.String)
		ids, ok2 := b.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			t.Fatalf("pushed query columns are %s, %s; want the query schema's string, int64", b.Column(0).DataType(), b.Column(1).DataType())
		}
		for i := range ids.Len() {
			v := ids.Value(i)
			if v < 250 {
				t.Errorf("pushed query WHERE id >= 250 returned id %d", v)
			}
			if want := fmt.Sprintf("row-%d", v); names.Value(i) != want {
				t.Errorf("pushed query row id %d has name %q, want %q", v, names.Value(i), want)
			}
			n++
		}
	}
	if n != 50 {
		t.Errorf("pushed query WHERE id >= 250 returned %d rows, want 50", n)
	}

	counted := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	got = pushed(t, qp, catalogs.PushedQuery{Fragments: []string{"SELECT count(*) AS n FROM ", ""}, Tables: tables, Schema: counted})
	var total []int64
	for _, b := range got {
		c, ok := b.Column(0).(*array.Int64)
		if !ok {
			t.Fatalf("pushed count(*) is %s, want the query schema's int64", b.Column(0).DataType())
		}
		total = append(total, c.Int64Values()...)
	}
	if !slices.Equal(total, []int64{300}) {
		t.Errorf("pushed count(*) = %v, want [300]", total)
	}

	// One column asked, two promised to the client.
	bs, err := pushRead(ctx, qp, catalogs.PushedQuery{Fragments: []string{"SELECT id FROM ", ""}, Tables: tables, Schema: projected})
	if err == nil {
		t.Error("pushed query whose result has 1 column for a schema of 2: no error")
	}
	for _, b := range bs {
		b.Release()
	}
}

// pushed runs q and checks that its result comes in q.Schema.
func pushed(t *testing.T, qp catalogs.QueryPusher, q catalogs.PushedQuery) []arrow.RecordBatch {
	t.Helper()
	bs, err := pushRead(context.Background(), qp, q)
	if err != nil {
		t.Fatalf("PushQuery(%s): %v", strings.Join(q.Fragments, "<table>"), err)
	}
	for _, b := range bs {
		t.Cleanup(b.Release)
		if got := b.Schema(); !slices.Equal(fieldNames(got), fieldNames(q.Schema)) || got.NumFields() != q.Schema.NumFields() {
			t.Fatalf("PushQuery(%s) result schema %v, want the query's %v", strings.Join(q.Fragments, "<table>"), got, q.Schema)
		}
		for i, f := range q.Schema.Fields() {
			if !arrow.TypeEqual(b.Schema().Field(i).Type, f.Type) {
				t.Fatalf("PushQuery(%s) column %s is %s, want the query's %s", strings.Join(q.Fragments, "<table>"), f.Name, b.Schema().Field(i).Type, f.Type)
			}
		}
	}
	return bs
}

// pushRead runs q and reads its whole result (each batch retained).
func pushRead(ctx context.Context, qp catalogs.QueryPusher, q catalogs.PushedQuery) ([]arrow.RecordBatch, error) {
	rdr, err := qp.PushQuery(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		out = append(out, b)
	}
	if err := rdr.Err(); err != nil {
		for _, b := range out {
			b.Release()
		}
		return nil, err
	}
	return out, nil
}

// testCommitMatcher: a commit id names one set of files. MatchCommit
// finds no commit for an id never committed; for a landed id it answers
// the commit as recorded (its snapshot, its rows), and same only for the
// receipts it landed with: not for other receipts, nor for those plus
// more.
func (s suite) testCommitMatcher(t *testing.T) {
	in, id := s.setup(t, "matched")
	cm, ok := in.Provider.(catalogs.CommitMatcher)
	skipUnless(t, ok, "catalogs.CommitMatcher")
	ic, ok := in.Provider.(catalogs.IdempotentCommitter)
	if !ok {
		t.Fatal("the backend is a catalogs.CommitMatcher but no catalogs.IdempotentCommitter: no commit id could ever land")
	}
	ctx := context.Background()
	r1 := write(t, in, id, 0, 12)
	if _, landed, _, err := cm.MatchCommit(ctx, id, "match-1", []catalogs.WriteReceipt{r1}); err != nil || landed {
		t.Fatalf("MatchCommit(never committed) = landed %v, %v; want not landed", landed, err)
	}
	out, err := ic.CommitOnce(ctx, id, "match-1", []catalogs.WriteReceipt{r1})
	if err != nil {
		t.Fatalf("CommitOnce: %v", err)
	}
	rec, landed, same, err := cm.MatchCommit(ctx, id, "match-1", []catalogs.WriteReceipt{r1})
	if err != nil || !landed || !same {
		t.Fatalf("MatchCommit(its own receipts) = landed %v, same %v, %v; want both", landed, same, err)
	}
	if rec.RowCount != 12 || rec.Outcome.SnapshotID != out.SnapshotID {
		t.Errorf("MatchCommit record = %d rows in snapshot %d, want 12 in %d", rec.RowCount, rec.Outcome.SnapshotID, out.SnapshotID)
	}
	r2 := write(t, in, id, 100, 5)
	for name, rs := range map[string][]catalogs.WriteReceipt{"other receipts": {r2}, "its receipts and more": {r1, r2}} {
		rec, landed, same, err := cm.MatchCommit(ctx, id, "match-1", rs)
		if err != nil || !landed {
			t.Errorf("MatchCommit(%s) = landed %v, %v; want landed", name, landed, err)
			continue
		}
		if same {
			t.Errorf("MatchCommit(%s): same, want other files (a commit id names one set of files)", name)
		}
		if rec.RowCount != 12 {
			t.Errorf("MatchCommit(%s) record = %d rows, want the 12 recorded, never the request's", name, rec.RowCount)
		}
	}
	discard(t, in, id, []catalogs.WriteReceipt{r2})
}
