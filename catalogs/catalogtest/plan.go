package catalogtest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/catalogs"
)

// testFilePlanner checks PlanFiles: a plain plan's files exist, lie under
// its Root and, read with an independent Parquet reader, hold exactly the
// committed rows; a pruned plan never drops a matching row; a plan that
// is not plain says why.
func (s suite) testFilePlanner(t *testing.T) {
	in, id := s.setup(t, "planned")
	fp, ok := in.Provider.(catalogs.FilePlanner)
	if !ok && s.cfg.PlainPlans {
		t.Fatal("Config.PlainPlans is declared but the backend does not implement catalogs.FilePlanner")
	}
	skipUnless(t, ok, "catalogs.FilePlanner")
	ctx := context.Background()
	for i := range 3 {
		if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, int64(i)*100, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := fp.PlanFiles(ctx, id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatalf("PlanFiles: %v", err)
	}
	if !s.plain(t, "PlanFiles", plan) {
		return
	}
	checkPlan(t, "PlanFiles", plan)
	if plan.FilesTotal < len(plan.Files) {
		t.Errorf("PlanFiles: %d files planned of %d in the snapshot", len(plan.Files), plan.FilesTotal)
	}
	wantRows(t, "PlanFiles", readFiles(t, plan.Files), 0, 300)
	if s.cfg.Snapshots {
		spec, err := in.Provider.GetTableSpec(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if plan.SnapshotID == nil || spec.CurrentSnapshotID == nil || *plan.SnapshotID != *spec.CurrentSnapshotID {
			t.Errorf("PlanFiles planned snapshot %v, want the current %v", plan.SnapshotID, spec.CurrentSnapshotID)
		}
	}

	// Pruning may drop files, never a row that matches.
	pruned, err := fp.PlanFiles(ctx, id, catalogs.ScanRequest{
		Columns: []string{"id"},
		Filters: []catalogs.Filter{{Column: "id", Op: catalogs.OpGtEq, Values: []any{int64(250)}}},
	})
	if err != nil {
		t.Fatalf("PlanFiles with a filter: %v", err)
	}
	if pruned.Plain {
		checkPlan(t, "PlanFiles with a filter", pruned)
		for _, f := range pruned.Files {
			if !slices.Contains(plan.Files, f) {
				t.Errorf("PlanFiles with a filter planned %s, which the full plan has not", f)
			}
		}
		got := readFiles(t, pruned.Files)
		for i := int64(250); i < 300; i++ {
			if _, ok := got[i]; !ok {
				t.Errorf("PlanFiles with id >= 250 pruned away the file of row %d", i)
				break
			}
		}
	}
	missing := catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: "no_such_table"}
	_, err = fp.PlanFiles(ctx, missing, catalogs.ScanRequest{})
	wantKind(t, "PlanFiles(unknown)", err, catalogs.ErrNotFound, "no_such_table")
}

// testStagedPlanner checks PlanStaged: the plan of a transaction's view
// reads the committed rows and the staged ones, only the staged ones for
// an overwrite, and planning commits nothing.
func (s suite) testStagedPlanner(t *testing.T) {
	in, id := s.setup(t, "staged")
	sp, ok := in.Provider.(catalogs.StagedPlanner)
	skipUnless(t, ok, "catalogs.StagedPlanner")
	ctx := context.Background()
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, 0, 100)}); err != nil {
		t.Fatal(err)
	}
	staged := []catalogs.WriteReceipt{write(t, in, id, 100, 50)}
	defer discard(t, in, id, staged)
	plan, err := sp.PlanStaged(ctx, id, catalogs.ScanRequest{}, staged, false)
	if err != nil {
		t.Fatalf("PlanStaged: %v", err)
	}
	if !s.plain(t, "PlanStaged", plan) {
		return
	}
	checkPlan(t, "PlanStaged", plan)
	if plan.SnapshotID != nil {
		t.Errorf("PlanStaged plan has snapshot %d: no snapshot holds staged files", *plan.SnapshotID)
	}
	wantRows(t, "PlanStaged", readFiles(t, plan.Files), 0, 150)

	over, err := sp.PlanStaged(ctx, id, catalogs.ScanRequest{}, staged, true)
	if err != nil {
		t.Fatalf("PlanStaged(overwrite): %v", err)
	}
	if s.plain(t, "PlanStaged(overwrite)", over) {
		checkPlan(t, "PlanStaged(overwrite)", over)
		wantRows(t, "PlanStaged(overwrite)", readFiles(t, over.Files), 100, 50)
	}
	if n := rows(t, in, id); n != 100 {
		t.Errorf("rows after planning staged writes = %d, want the 100 committed", n)
	}

	// A table whose first data are the transaction's.
	first := createTable(t, in, "staged_first")
	fresh := []catalogs.WriteReceipt{write(t, in, first, 0, 10)}
	defer discard(t, in, first, fresh)
	plan, err = sp.PlanStaged(ctx, first, catalogs.ScanRequest{}, fresh, false)
	if err != nil {
		t.Fatalf("PlanStaged(table without commits): %v", err)
	}
	if s.plain(t, "PlanStaged(table without commits)", plan) {
		checkPlan(t, "PlanStaged(table without commits)", plan)
		wantRows(t, "PlanStaged(table without commits)", readFiles(t, plan.Files), 0, 10)
	}
}

// plain reports whether plan is plain; a plan that is not must say why,
// and must be plain when the backend declared PlainPlans.
func (s suite) plain(t *testing.T, what string, plan *catalogs.FilePlan) bool {
	t.Helper()
	if plan == nil {
		t.Fatalf("%s: nil plan", what)
	}
	if plan.Plain {
		return true
	}
	switch {
	case s.cfg.PlainPlans:
		t.Errorf("%s: plan is not plain (%s), but the backend declared PlainPlans", what, plan.Reason)
	case plan.Reason == "":
		t.Errorf("%s: a plan that is not plain gives no Reason", what)
	default:
		t.Logf("%s: not plain: %s", what, plan.Reason)
	}
	return false
}

// checkPlan checks a plain plan's files: absolute, clean, distinct,
// existing regular files under Root, with their sizes where given.
func checkPlan(t *testing.T, what string, plan *catalogs.FilePlan) {
	t.Helper()
	if plan.Root == "" || !filepath.IsAbs(plan.Root) {
		t.Errorf("%s: root %q is not an absolute directory", what, plan.Root)
		return
	}
	if len(plan.FileBytes) != len(plan.Files) {
		t.Errorf("%s: %d file sizes for %d files", what, len(plan.FileBytes), len(plan.Files))
	}
	seen := map[string]bool{}
	for i, f := range plan.Files {
		if seen[f] {
			t.Errorf("%s: file %s planned twice", what, f)
		}
		seen[f] = true
		rel, err := filepath.Rel(plan.Root, f)
		if !filepath.IsAbs(f) || filepath.Clean(f) != f || err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			t.Errorf("%s: file %s does not lie under root %s", what, f, plan.Root)
			continue
		}
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s: planned file %s is not a regular file: %v", what, f, err)
			continue
		}
		if i < len(plan.FileBytes) && plan.FileBytes[i] != 0 && plan.FileBytes[i] != st.Size() {
			t.Errorf("%s: file %s is %d bytes, the plan says %d", what, f, st.Size(), plan.FileBytes[i])
		}
	}
}

// readFiles reads the suite's columns from Parquet files with arrow-go's
// own reader, independently of the backend: id → name.
func readFiles(t *testing.T, paths []string) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, p := range paths {
		for id, name := range readFile(t, p) {
			if _, dup := out[id]; dup {
				t.Errorf("row %d is in two planned files", id)
			}
			out[id] = name
		}
	}
	return out
}

func readFile(t *testing.T, path string) map[int64]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open planned file: %v", err)
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("read planned file %s: %v", path, err)
	}
	defer tbl.Release()
	ids, names := column(t, tbl, path, "id"), column(t, tbl, path, "name")
	out := map[int64]string{}
	for c, chunk := range ids.Chunks() {
		idc, ok := chunk.(*array.Int64)
		if !ok {
			t.Fatalf("file %s: column id is %s, want int64", path, chunk.DataType())
		}
		nc, ok := names.Chunk(c).(interface{ Value(int) string })
		if !ok || names.Chunk(c).Len() != idc.Len() {
			t.Fatalf("file %s: column name is %s in chunks unlike id's", path, names.DataType())
		}
		for i := range idc.Len() {
			out[idc.Value(i)] = nc.Value(i)
		}
	}
	return out
}

func column(t *testing.T, tbl arrow.Table, path, name string) *arrow.Chunked {
	t.Helper()
	for i := range int(tbl.NumCols()) {
		if tbl.Schema().Field(i).Name == name {
			return tbl.Column(i).Data()
		}
	}
	t.Fatalf("file %s has no column %q (schema %v)", path, name, tbl.Schema())
	return nil
}

// wantRows checks that got holds exactly rows [from, from+n) of Batch.
func wantRows(t *testing.T, what string, got map[int64]string, from, n int64) {
	t.Helper()
	if int64(len(got)) != n {
		t.Errorf("%s: the files hold %d rows, want %d", what, len(got), n)
	}
	for i := from; i < from+n; i++ {
		if name, ok := got[i]; !ok || name != fmt.Sprintf("row-%d", i) {
			t.Errorf("%s: row %d = %q, %v; want row-%d (rows %v)", what, i, name, ok, i, firstKeys(got))
			return
		}
	}
}

func firstKeys(m map[int64]string) []int64 {
	k := slices.Sorted(maps.Keys(m))
	return k[:min(len(k), 10)]
}
