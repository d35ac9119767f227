package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// smallFiles is a table with a 1 MiB target file size and six appends of
// ten rows, one small file each.
func smallFiles(t *testing.T) (*Provider, string, catalogs.TableIdent, []int64) {
	t.Helper()
	p, dir := openTemp(t)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "small"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := p.cat.LoadTable(ctx, table.Identifier{"default", "small"})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(ice.Properties{table.WriteTargetFileSizeBytesKey: "1048576"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var snaps []int64
	for i := range int64(6) {
		out, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stageIn(t, p, id, i*10, 10)})
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, out.SnapshotID)
	}
	return p, dir, id, snaps
}

func liveFiles(t *testing.T, p *Provider, id catalogs.TableIdent) []string {
	t.Helper()
	tbl, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	files, err := currentFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, f.FilePath())
	}
	return out
}

// TestRewriteDataFiles: six small files of one partition are rewritten
// into one in a `replace` snapshot recording the task; a dry run before
// reports the plan and changes no file; every row reads as before, value
// by value, at the new snapshot and by time travel to the old ones, with
// iceberg-go and with pyiceberg.
func TestRewriteDataFiles(t *testing.T) {
	p, dir, id, snaps := smallFiles(t)
	ctx := context.Background()
	wh := filepath.Join(dir, "warehouse")
	before := filesUnder(t, wh)
	req := catalogs.MaintainRequest{Tasks: []string{catalogs.TaskRewriteDataFiles}, DryRun: true}
	dry, err := p.Maintain(ctx, id, req)
	if err != nil || dry.Tasks[0].Committed || dry.Tasks[0].RewrittenFiles != 6 || dry.Tasks[0].AddedFiles != 1 {
		t.Fatalf("dry run = %+v, %v: want 6 files into 1, nothing committed", dry, err)
	}
	if after := filesUnder(t, wh); !slices.Equal(after, before) {
		t.Fatal("a dry run changed files")
	}
	req.DryRun = false
	rep, err := p.Maintain(ctx, id, req)
	if err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	if tr := rep.Tasks[0]; !tr.Committed || tr.RewrittenFiles != 6 || tr.AddedFiles != 1 || tr.Abandoned != "" {
		t.Fatalf("report = %+v, want 6 files rewritten into 1", tr)
	}
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cur := tbl.CurrentSnapshot()
	if cur.Summary == nil || cur.Summary.Operation != table.OpReplace || cur.Summary.Properties[MaintenanceKey] != catalogs.TaskRewriteDataFiles {
		t.Errorf("rewrite snapshot summary = %+v, want a replace recording %s", cur.Summary, catalogs.TaskRewriteDataFiles)
	}
	if n := len(liveFiles(t, p, id)); n != 1 {
		t.Errorf("live data files after the rewrite = %d, want 1", n)
	}
	want := wantRowsOf([2]int64{0, 60})
	for _, s := range []int64{cur.SnapshotID, snaps[5]} {
		if got := snapshotRows(t, tbl, s); !slices.Equal(got, want) {
			t.Errorf("snapshot %d reads %v, want %v", s, got, want)
		}
	}
	pyicebergSnapshots(t, dir, id.Name, map[int64][][2]any{cur.SnapshotID: want, snaps[5]: want, snaps[0]: wantRowsOf([2]int64{0, 10})})
}

// pyicebergSnapshots checks, when pyiceberg is installed (make venv),
// that it reads each snapshot of want as want has it.
func pyicebergSnapshots(t *testing.T, dir, name string, want map[int64][][2]any) {
	t.Helper()
	py := filepath.Join("..", "..", ".venv", "bin", "python")
	if v := os.Getenv("FLIGHTGW_PYTHON"); v != "" {
		py = v
	}
	if err := exec.Command(py, "-c", "import pyiceberg.catalog.sql").Run(); err != nil {
		t.Logf("pyiceberg not checked: no python with pyiceberg at %s (make venv): %v", py, err)
		return
	}
	cmd := exec.Command(py, filepath.Join("testdata", "pyiceberg_expired.py"), dir, name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v\n%s", err, stderr.String())
	}
	var got struct {
		Snapshots map[string][][]any `json:"snapshots"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pyiceberg output %q: %v", out, err)
	}
	for snap, rows := range want {
		var have [][2]any
		for _, r := range got.Snapshots[fmt.Sprint(snap)] {
			have = append(have, [2]any{int64(r[0].(float64)), r[1]})
		}
		if !slices.Equal(have, rows) {
			t.Errorf("pyiceberg reads snapshot %d as %v, want %v", snap, have, rows)
		}
	}
}

// TestRewriteLosesToWriter: a rewrite planned on metadata a writer has
// since moved is abandoned, and leaves no file behind: the warehouse
// holds what it held after the writer's commit, and every row reads.
func TestRewriteLosesToWriter(t *testing.T) {
	p, dir, id, _ := smallFiles(t)
	ctx := context.Background()
	stale, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stageIn(t, p, id, 60, 10)}); err != nil {
		t.Fatal(err)
	}
	wh := filepath.Join(dir, "warehouse")
	before := filesUnder(t, wh)
	tr, err := p.rewriteOn(ctx, id, stale, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskRewriteDataFiles}})
	if err != nil {
		t.Fatalf("rewrite on stale metadata: %v", err)
	}
	if tr.Committed || tr.Abandoned == "" {
		t.Errorf("rewrite on stale metadata = %+v, want abandoned", tr)
	}
	if after := filesUnder(t, wh); !slices.Equal(after, before) {
		t.Errorf("an abandoned rewrite left files: %v", diffFiles(before, after))
	}
	if n := scanCount(t, p, id); n != 70 {
		t.Errorf("rows after the abandoned rewrite = %d, want 70", n)
	}
	if n := len(liveFiles(t, p, id)); n != 7 {
		t.Errorf("live files = %d, want the 7 appended", n)
	}
}

// diffFiles lists what is in b and not in a.
func diffFiles(a, b []string) []string {
	var out []string
	for _, f := range b {
		if !slices.Contains(a, f) {
			out = append(out, f)
		}
	}
	return out
}
