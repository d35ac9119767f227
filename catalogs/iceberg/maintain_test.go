package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// expired is a table with a history to expire: five appends (S1..S5) of
// ten rows each, a tag v2 on S2, then an overwrite S6 with three rows,
// and a staged receipt that a live unit of work holds.
type expired struct {
	p     *Provider
	dir   string
	id    catalogs.TableIdent
	snaps []int64    // S1..S6
	files [][]string // the data files each commit added
	held  catalogs.WriteReceipt
}

func (e *expired) holds(_ context.Context, t catalogs.TableIdent) []catalogs.WriteReceipt {
	if t.Key() == e.id.Key() {
		return []catalogs.WriteReceipt{e.held}
	}
	return nil
}

func receiptFiles(t *testing.T, id catalogs.TableIdent, r catalogs.WriteReceipt) []string {
	t.Helper()
	rms, err := parseReceipts(id, []catalogs.WriteReceipt{r})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rm := range rms {
		for _, f := range rm.Files {
			p, _ := localPath(f.Path)
			out = append(out, p)
		}
	}
	return out
}

func newExpired(t *testing.T, props map[string]string) *expired {
	t.Helper()
	p, dir := openTemp(t)
	ctx := context.Background()
	e := &expired{p: p, dir: dir, id: catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "expire"}}
	if _, err := p.CreateTable(ctx, e.id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"default", "expire"}
	tbl, err := p.cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(ice.Properties(props)); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	add := func(out catalogs.CommitOutcome, err error, r catalogs.WriteReceipt) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		e.snaps, e.files = append(e.snaps, out.SnapshotID), append(e.files, receiptFiles(t, e.id, r))
	}
	for i := range int64(5) {
		r := stageIn(t, p, e.id, i*10, 10)
		out, err := p.Commit(ctx, e.id, []catalogs.WriteReceipt{r})
		add(out, err, r)
		if i == 1 {
			if _, _, err := p.cat.CommitTable(ctx, ident, nil, []table.Update{
				table.NewSetSnapshotRefUpdate("v2", out.SnapshotID, table.TagRef, 0, 0, 0)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := stageIn(t, p, e.id, 1000, 3)
	out, err := p.CommitOverwrite(ctx, e.id, "", []catalogs.WriteReceipt{r})
	add(out, err, r)
	e.held = stageIn(t, p, e.id, 2000, 2)
	time.Sleep(20 * time.Millisecond) // every snapshot older than a max age of 1 ms
	return e
}

// snapshotRows reads snapshot id of the table with iceberg-go, as
// (id, name) pairs sorted by id.
func snapshotRows(t *testing.T, tbl *table.Table, snap int64) [][2]any {
	t.Helper()
	at, err := tbl.Scan(table.WithSnapshotID(snap)).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("time travel to snapshot %d: %v", snap, err)
	}
	defer at.Release()
	rd := array.NewTableReader(at, 1024)
	defer rd.Release()
	var out [][2]any
	for rd.Next() {
		b := rd.RecordBatch()
		ids, names := b.Column(0).(*array.Int64), b.Column(1).(*array.String)
		for i := range int(b.NumRows()) {
			out = append(out, [2]any{ids.Value(i), names.Value(i)})
		}
	}
	slices.SortFunc(out, func(a, b [2]any) int { return int(a[0].(int64) - b[0].(int64)) })
	return out
}

// wantRowsOf are the rows ids [from, from+n) of catalogtest.Batch.
func wantRowsOf(spans ...[2]int64) [][2]any {
	var out [][2]any
	for _, s := range spans {
		for i := s[0]; i < s[0]+s[1]; i++ {
			out = append(out, [2]any{i, fmt.Sprintf("row-%d", i)})
		}
	}
	return out
}

// expireOnly names the one task the expiry tests run.
var expireOnly = []string{catalogs.TaskExpireSnapshots}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestExpireSnapshots: with history.expire.max-snapshot-age-ms 1 and the
// default min-snapshots-to-keep 1, expiry removes every snapshot but the
// current one and the tagged one, in a commit that keeps both refs; a dry
// run before it reports the same and changes no file; the data files only
// expired snapshots reached are deleted, those a retained snapshot or a
// live unit of work holds stay, every file the metadata still reaches
// exists, and time travel to each retained snapshot reads its rows.
func TestExpireSnapshots(t *testing.T) {
	e := newExpired(t, map[string]string{table.MaxSnapshotAgeMsKey: "1"})
	ctx := context.Background()
	wh := filepath.Join(e.dir, "warehouse")
	before := filesUnder(t, wh)
	wantExpired := []int64{e.snaps[0], e.snaps[2], e.snaps[3], e.snaps[4]}
	slices.Sort(wantExpired)
	req := catalogs.MaintainRequest{Tasks: expireOnly, DryRun: true, Held: e.holds}
	dry, err := e.p.Maintain(ctx, e.id, req)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if len(dry.Tasks) != 1 || dry.Tasks[0].Committed || !slices.Equal(dry.Tasks[0].ExpiredSnapshots, wantExpired) || dry.Tasks[0].DataFiles != 3 {
		t.Fatalf("dry run = %+v, want snapshots %v expired and 3 data files", dry, wantExpired)
	}
	if after := filesUnder(t, wh); !slices.Equal(after, before) {
		t.Fatalf("a dry run changed the files:\nbefore %v\nafter  %v", before, after)
	}

	req.DryRun = false
	rep, err := e.p.Maintain(ctx, e.id, req)
	if err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	tr := rep.Tasks[0]
	if !tr.Committed || !slices.Equal(tr.ExpiredSnapshots, wantExpired) || tr.RetainedSnapshots != 2 ||
		tr.DataFiles != 3 || tr.ManifestFiles < 4 || len(tr.Files) != 0 {
		t.Errorf("report = %+v, want %v expired, 2 retained, 3 data files and at least 4 manifest lists deleted", tr, wantExpired)
	}
	for i, fs := range e.files {
		for _, f := range fs {
			if gone := i >= 2 && i <= 4; exists(f) == gone {
				t.Errorf("data file of S%d %s: exists %v, want %v", i+1, f, !gone, !gone)
			}
		}
	}
	for _, f := range receiptFiles(t, e.id, e.held) {
		if !exists(f) {
			t.Errorf("held file %s was deleted", f)
		}
	}
	tbl, err := e.p.load(ctx, e.id)
	if err != nil {
		t.Fatal(err)
	}
	var kept []int64
	for _, s := range tbl.Metadata().Snapshots() {
		kept = append(kept, s.SnapshotID)
	}
	if !slices.Equal(kept, []int64{e.snaps[1], e.snaps[5]}) {
		t.Errorf("snapshots kept %v, want S2 %d and S6 %d", kept, e.snaps[1], e.snaps[5])
	}
	refs := map[string]int64{}
	for name, ref := range tbl.Metadata().Refs() {
		refs[name] = ref.SnapshotID
	}
	if want := map[string]int64{"main": e.snaps[5], "v2": e.snaps[1]}; !maps.Equal(refs, want) {
		t.Errorf("refs after expiry = %v, want %v", refs, want)
	}
	reach := newRefs()
	reach.live = true // a retained entry recording a deletion names a file no snapshot reads
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if err := reach.addTable(fsys, tbl); err != nil {
		t.Fatalf("the metadata after expiry does not read: %v", err)
	}
	for c := range reach.paths {
		if !exists(c) {
			t.Errorf("the metadata reaches %s live, which is gone", c)
		}
	}
	if got, want := snapshotRows(t, tbl, e.snaps[1]), wantRowsOf([2]int64{0, 20}); !slices.Equal(got, want) {
		t.Errorf("time travel to the tag reads %v, want %v", got, want)
	}
	if got, want := snapshotRows(t, tbl, e.snaps[5]), wantRowsOf([2]int64{1000, 3}); !slices.Equal(got, want) {
		t.Errorf("the current snapshot reads %v, want %v", got, want)
	}
	if _, err := e.p.Commit(ctx, e.id, []catalogs.WriteReceipt{e.held}); err != nil {
		t.Fatalf("commit of the held receipt after expiry: %v", err)
	}
	if n := scanCount(t, e.p, e.id); n != 5 {
		t.Errorf("rows after the held commit = %d, want 5", n)
	}
	// A second run finds nothing more to expire.
	again, err := e.p.Maintain(ctx, e.id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskExpireSnapshots}, KeepNewerThan: time.Hour})
	if err != nil || len(again.Tasks[0].ExpiredSnapshots) != 0 || again.Tasks[0].Committed {
		t.Errorf("expiry with a floor of an hour = %+v, %v: want nothing expired", again, err)
	}
}

func scanCount(t *testing.T, p *Provider, id catalogs.TableIdent) int64 {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	var n int64
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	return n
}

// TestExpireSnapshotsDefaults: with the table's default retention (5
// days) nothing as young as these snapshots expires, and with gc.enabled
// false expiry is refused (FailedPrecondition) rather than ignored.
func TestExpireSnapshotsDefaults(t *testing.T) {
	e := newExpired(t, map[string]string{"write.format.default": "parquet"})
	rep, err := e.p.Maintain(context.Background(), e.id, catalogs.MaintainRequest{Tasks: expireOnly})
	if err != nil || len(rep.Tasks) != 1 || len(rep.Tasks[0].ExpiredSnapshots) != 0 || rep.Tasks[0].RetainedSnapshots != 6 {
		t.Errorf("Maintain with default retention = %+v, %v: want all 6 snapshots retained", rep, err)
	}
	off := newExpired(t, map[string]string{table.MaxSnapshotAgeMsKey: "1", table.GCEnabledKey: "false"})
	_, err = off.p.Maintain(context.Background(), off.id, catalogs.MaintainRequest{Tasks: expireOnly})
	if catalogs.Kind(err) != catalogs.ErrFailedPrecondition {
		t.Errorf("Maintain with gc.enabled false: %v, want FailedPrecondition", err)
	}
}

// TestExpireLosesToWriter: an expiry planned on metadata a writer has
// since moved does not land (its commit asserts the refs); the writer's
// snapshot and every expirable one are still there.
func TestExpireLosesToWriter(t *testing.T) {
	e := newExpired(t, map[string]string{table.MaxSnapshotAgeMsKey: "1"})
	ctx := context.Background()
	tbl, err := e.p.load(ctx, e.id)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.p.planExpiry(ctx, e.id, tbl, catalogs.MaintainRequest{})
	if err != nil || len(plan.expire) != 4 {
		t.Fatalf("plan = %+v, %v: want 4 snapshots", plan.expire, err)
	}
	out, err := e.p.Commit(ctx, e.id, []catalogs.WriteReceipt{e.held})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.p.commitExpiry(ctx, tbl, plan); !isConflict(err) {
		t.Fatalf("expiry on stale metadata: %v, want a conflict", err)
	}
	now, err := e.p.load(ctx, e.id)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(now.Metadata().Snapshots()); n != 7 || now.CurrentSnapshot().SnapshotID != out.SnapshotID {
		t.Errorf("after the lost expiry: %d snapshots, current %d; want 7, the writer's %d", n, now.CurrentSnapshot().SnapshotID, out.SnapshotID)
	}
}

// TestPyIcebergReadsExpiredTable: pyiceberg reads the table after expiry
// value by value, at its current snapshot and by time travel to each
// retained one, and sees the refs kept.
func TestPyIcebergReadsExpiredTable(t *testing.T) {
	py := filepath.Join("..", "..", ".venv", "bin", "python")
	if v := os.Getenv("FLIGHTGW_PYTHON"); v != "" {
		py = v
	}
	if err := exec.Command(py, "-c", "import pyiceberg.catalog.sql").Run(); err != nil {
		t.Skipf("no python with pyiceberg at %s (make venv): %v", py, err)
	}
	e := newExpired(t, map[string]string{table.MaxSnapshotAgeMsKey: "1"})
	if _, err := e.p.Maintain(context.Background(), e.id, catalogs.MaintainRequest{Tasks: expireOnly, Held: e.holds}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("testdata", "pyiceberg_expired.py"), e.dir, e.id.Name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyiceberg: %v\n%s", err, stderr.String())
	}
	var got struct {
		Current   int64              `json:"current"`
		Refs      map[string]int64   `json:"refs"`
		Snapshots map[string][][]any `json:"snapshots"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pyiceberg output %q: %v", out, err)
	}
	if got.Current != e.snaps[5] || got.Refs["main"] != e.snaps[5] || got.Refs["v2"] != e.snaps[1] || len(got.Snapshots) != 2 {
		t.Fatalf("pyiceberg sees current %d, refs %v, %d snapshots; want current and main %d, v2 %d, 2 snapshots",
			got.Current, got.Refs, len(got.Snapshots), e.snaps[5], e.snaps[1])
	}
	for snap, want := range map[int64][][2]any{e.snaps[1]: wantRowsOf([2]int64{0, 20}), e.snaps[5]: wantRowsOf([2]int64{1000, 3})} {
		rows := got.Snapshots[fmt.Sprint(snap)]
		var have [][2]any
		for _, r := range rows {
			have = append(have, [2]any{int64(r[0].(float64)), r[1]})
		}
		if !slices.Equal(have, want) {
			t.Errorf("pyiceberg reads snapshot %d as %v, want %v", snap, have, want)
		}
	}
}
