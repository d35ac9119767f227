package iceberg

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

func dataManifests(t *testing.T, p *Provider, id catalogs.TableIdent) int {
	t.Helper()
	tbl := mustLoad(t, p, id)
	fsys, err := fileIO(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return len(mfs)
}

// TestRewriteManifests: six appends' six manifests are merged into one in
// a replace snapshot; a dry run before reports it and changes no file;
// every snapshot reads as before, with iceberg-go and pyiceberg; a
// rewrite planned on metadata a writer has since moved is abandoned and
// leaves no file.
func TestRewriteManifests(t *testing.T) {
	p, dir, id, snaps := smallFiles(t)
	ctx := context.Background()
	wh := filepath.Join(dir, "warehouse")
	if n := dataManifests(t, p, id); n != 6 {
		t.Fatalf("manifests before = %d, want 6", n)
	}
	before := filesUnder(t, wh)
	req := catalogs.MaintainRequest{Tasks: []string{catalogs.TaskRewriteManifests}, DryRun: true}
	dry, err := p.Maintain(ctx, id, req)
	if err != nil || dry.Tasks[0].Committed || dry.Tasks[0].RewrittenFiles != 6 || dry.Tasks[0].AddedFiles != 1 {
		t.Fatalf("dry run = %+v, %v: want 6 manifests into 1", dry, err)
	}
	if !slices.Equal(filesUnder(t, wh), before) {
		t.Fatal("a dry run changed files")
	}
	stale := mustLoad(t, p, id)
	req.DryRun = false
	rep, err := p.Maintain(ctx, id, req)
	if err != nil || !rep.Tasks[0].Committed || rep.Tasks[0].RewrittenFiles != 6 || rep.Tasks[0].AddedFiles != 1 {
		t.Fatalf("rewrite = %+v, %v: want 6 manifests into 1", rep, err)
	}
	tbl := mustLoad(t, p, id)
	if op := tbl.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Errorf("operation = %s, want replace", op)
	}
	if n := dataManifests(t, p, id); n != 1 {
		t.Errorf("manifests after = %d, want 1", n)
	}
	want := wantRowsOf([2]int64{0, 60})
	for _, s := range []int64{tbl.CurrentSnapshot().SnapshotID, snaps[5]} {
		if got := snapshotRows(t, tbl, s); !slices.Equal(got, want) {
			t.Errorf("snapshot %d reads %v, want %v", s, got, want)
		}
	}
	pyicebergSnapshots(t, dir, id.Name, map[int64][][2]any{tbl.CurrentSnapshot().SnapshotID: want, snaps[0]: wantRowsOf([2]int64{0, 10})})

	// The rewrite above moved the table: one planned on the metadata read
	// before it loses, and removes what it wrote.
	mid := filesUnder(t, wh)
	tr, err := p.rewriteManifestsOn(ctx, id, stale, catalogs.MaintainRequest{})
	if err != nil || tr.Committed || tr.Abandoned == "" {
		t.Errorf("rewrite on stale metadata = %+v, %v: want abandoned", tr, err)
	}
	if after := filesUnder(t, wh); !slices.Equal(after, mid) {
		t.Errorf("an abandoned manifest rewrite left files: %v", diffFiles(mid, after))
	}
}
