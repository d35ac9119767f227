package paimon_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// expiring is a Paimon table with a history to expire (num-retained.min
// 2, time-retained 1 ms): 1 appends A, 2 appends B and is tagged t2, 3
// overwrites with C, 4 overwrites with D, 5 and 6 append E and F. A
// staged write is held by a live unit of work.
type expiring struct {
	p     *paimon.Provider
	wh    string
	dir   string
	id    catalogs.TableIdent
	files [][]string // the data files each commit added, relative to dir
	held  []catalogs.WriteReceipt
}

func (e *expiring) holds(_ context.Context, t catalogs.TableIdent) []catalogs.WriteReceipt {
	if t.Key() == e.id.Key() {
		return e.held
	}
	return nil
}

// dataFiles lists the bucket files under dir, relative to it.
func dataFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range tableFiles(t, dir) {
		if strings.Contains(f, "bucket-") {
			out = append(out, f)
		}
	}
	return out
}

func newExpiring(t *testing.T, defaults map[string]string) *expiring {
	t.Helper()
	props := map[string]string{}
	for k, v := range defaults {
		props[paimon.PropTableDefaultPrefix+k] = v
	}
	p, wh := openLocal(t, props)
	ctx := context.Background()
	e := &expiring{p: p, wh: wh, id: catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "expiring"}}
	e.dir = filepath.Join(wh, "default.db", e.id.Name)
	if _, err := p.CreateTable(ctx, e.id, sampleSchema, map[string]string{"partition": "p"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		from      int64
		n         int64
		overwrite bool
	}{{0, 10, false}, {10, 10, false}, {100, 5, true}, {200, 5, true}, {300, 5, false}, {400, 5, false}} {
		before := dataFiles(t, e.dir)
		rs := stage(t, p, e.id, c.from, c.n)
		var err error
		if c.overwrite {
			_, err = p.CommitOverwrite(ctx, e.id, fmt.Sprintf("c%d", i+1), rs)
		} else {
			_, err = p.CommitOnce(ctx, e.id, fmt.Sprintf("c%d", i+1), rs)
		}
		if err != nil {
			t.Fatal(err)
		}
		var added []string
		for _, f := range dataFiles(t, e.dir) {
			if !slices.Contains(before, f) {
				added = append(added, f)
			}
		}
		e.files = append(e.files, added)
		if i == 1 {
			snap, err := os.ReadFile(filepath.Join(e.dir, "snapshot", "snapshot-2"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(e.dir, "tag", "tag-t2"), snap)
		}
	}
	e.held = stage(t, p, e.id, 900, 2)
	// The setup's snapshots age past expiry's own floor (twice the commit
	// loop's total timeout, 2 min by default): the provider's clock moves
	// on 10 minutes; what is committed from now on is young.
	paimon.SetNow(p, func() time.Time { return time.Now().Add(10 * time.Minute) })
	return e
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestPaimonExpireSnapshots: with snapshot.num-retained.min 2 and
// snapshot.time-retained 1 ms, expiry removes snapshots 1 to 4 and moves
// EARLIEST to 5; a dry run before reports the same and deletes nothing;
// only the data files of C (live in snapshots 3 and 4 alone) are deleted:
// A and B stay for the tag, D, E and F for the retained snapshots, the
// held files for their unit of work; the table reads as before, and
// pypaimon reads it too.
func TestPaimonExpireSnapshots(t *testing.T) {
	e := newExpiring(t, map[string]string{"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"})
	ctx := context.Background()
	want := scanRendered(t, e.p, e.id)
	before := tableFiles(t, e.dir)
	dry, err := e.p.Maintain(ctx, e.id, catalogs.MaintainRequest{DryRun: true, Held: e.holds})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if d := dry.Tasks[0]; d.Committed || !slices.Equal(d.ExpiredSnapshots, []int64{1, 2, 3, 4}) || d.DataFiles != len(e.files[2]) {
		t.Fatalf("dry run = %+v, want snapshots 1-4 and C's %d files", d, len(e.files[2]))
	}
	if after := tableFiles(t, e.dir); !slices.Equal(after, before) {
		t.Fatalf("a dry run changed files: %v", diff(before, after))
	}
	rep, err := e.p.Maintain(ctx, e.id, catalogs.MaintainRequest{Held: e.holds})
	if err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	tr := rep.Tasks[0]
	if !tr.Committed || !slices.Equal(tr.ExpiredSnapshots, []int64{1, 2, 3, 4}) || tr.RetainedSnapshots != 2 ||
		tr.DataFiles != len(e.files[2]) || tr.ManifestFiles == 0 {
		t.Errorf("report = %+v, want snapshots 1-4 expired, 2 retained, C's %d files and some manifests deleted", tr, len(e.files[2]))
	}
	for i := int64(1); i <= 6; i++ {
		if got := exists(filepath.Join(e.dir, "snapshot", fmt.Sprintf("snapshot-%d", i))); got != (i > 4) {
			t.Errorf("snapshot-%d exists %v", i, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "snapshot", "EARLIEST")); string(b) != "5" {
		t.Errorf("EARLIEST = %q, want 5", b)
	}
	for i, fs := range e.files {
		for _, f := range fs {
			if got := exists(filepath.Join(e.dir, f)); got == (i == 2) {
				t.Errorf("data file %s of commit %d exists %v", f, i+1, got)
			}
		}
	}
	if got := scanRendered(t, e.p, e.id); !slices.Equal(got, want) {
		t.Errorf("after expiry the table reads %v, want %v", got, want)
	}
	pypaimonReads(t, e.wh, e.id.Name, want)
	if _, err := e.p.CommitOnce(ctx, e.id, "held", e.held); err != nil {
		t.Fatalf("commit of the held files after expiry: %v", err)
	}
	if got := len(scanRendered(t, e.p, e.id)); got != len(want)+2 {
		t.Errorf("rows after the held commit = %d, want %d", got, len(want)+2)
	}
}

// pypaimonReads runs integration/pypaimon on the warehouse (with
// FLIGHTGW_PYPAIMON, or the repository's .venv-paimon) and checks it
// reads want from table.
func pypaimonReads(t *testing.T, wh, table string, want []string) {
	t.Helper()
	py := os.Getenv("FLIGHTGW_PYPAIMON")
	if py == "" {
		py = filepath.Join("..", "..", ".venv-paimon", "bin", "python")
	}
	if err := exec.Command(py, "-c", "import pypaimon").Run(); err != nil {
		t.Logf("pypaimon not checked: no python with pypaimon at %s (make .venv-paimon/.installed): %v", py, err)
		return
	}
	exp := filepath.Join(wh, "expected")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("ROWS %d\n%s\n", len(want), strings.Join(want, "\n"))
	if err := os.WriteFile(filepath.Join(exp, table+".txt"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "pytest", "-q", filepath.Join("..", "..", "integration", "pypaimon"))
	cmd.Env = append(os.Environ(), "PAIMON_SAMPLES="+wh)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 passed") {
		t.Fatalf("pypaimon read of %s: %v\n%s", table, err, out)
	}
}

// TestPaimonExpireKeeps: the table's defaults (10 retained) keep these
// six snapshots; a floor (KeepNewerThan) keeps young snapshots whatever
// the options; a consumer keeps the snapshots from its next one on; a
// changelog retained longer than snapshots is refused.
func TestPaimonExpireKeeps(t *testing.T) {
	ctx := context.Background()
	run := func(e *expiring, req catalogs.MaintainRequest) catalogs.TaskReport {
		t.Helper()
		rep, err := e.p.Maintain(ctx, e.id, req)
		if err != nil {
			t.Fatalf("Maintain: %v", err)
		}
		return rep.Tasks[0]
	}
	if tr := run(newExpiring(t, nil), catalogs.MaintainRequest{}); len(tr.ExpiredSnapshots) != 0 || tr.RetainedSnapshots != 6 {
		t.Errorf("with the default retention: %+v, want nothing expired", tr)
	}
	short := map[string]string{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"}
	if tr := run(newExpiring(t, short), catalogs.MaintainRequest{KeepNewerThan: time.Hour}); len(tr.ExpiredSnapshots) != 0 {
		t.Errorf("with a floor of an hour: %+v, want nothing expired", tr)
	}
	e := newExpiring(t, short)
	writeFile(t, filepath.Join(e.dir, "consumer", "consumer-reader"), []byte(`{"nextSnapshot": 3}`))
	if tr := run(e, catalogs.MaintainRequest{}); !slices.Equal(tr.ExpiredSnapshots, []int64{1, 2}) {
		t.Errorf("with a consumer at 3: expired %v, want [1 2]", tr.ExpiredSnapshots)
	}
	cl := newExpiring(t, map[string]string{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms", "changelog.num-retained.min": "5"})
	_, err := cl.p.Maintain(ctx, cl.id, catalogs.MaintainRequest{})
	if catalogs.Kind(err) != catalogs.ErrFailedPrecondition || !strings.Contains(err.Error(), "changelog") {
		t.Errorf("with a long-lived changelog: %v, want FailedPrecondition naming the changelog", err)
	}
	if !exists(filepath.Join(cl.dir, "snapshot", "snapshot-1")) {
		t.Error("a refused expiry deleted snapshot-1")
	}
}

// TestPaimonExpiryFloorsPerSnapshot: the floors are read snapshot by
// snapshot, as Iceberg's expiry reads them: auto-commit writes (commit
// user write-…, which no client sends again) expire once past the
// commit window, while a snapshot recording a commit id a client may
// send again (msg-3) is kept for the replay window, and with it every
// later one (Paimon's expiry ends at the first snapshot it keeps); past
// the replay window it expires too. Before, every snapshot younger than
// the largest floor (12 h 10 min) was kept.
func TestPaimonExpiryFloorsPerSnapshot(t *testing.T) {
	p, _ := openLocal(t, map[string]string{paimon.PropTableDefaultPrefix + "snapshot.num-retained.min": "1",
		paimon.PropTableDefaultPrefix + "snapshot.time-retained": "1 ms"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "floors"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
	for i, user := range []string{"write-1", "write-2", "msg-3", "write-4", "write-5", "write-6"} {
		if _, err := p.CommitOnce(ctx, id, user, stage(t, p, id, int64(i*10), 10)); err != nil {
			t.Fatal(err)
		}
	}
	req := catalogs.MaintainRequest{Tasks: []string{catalogs.TaskExpireSnapshots},
		ReplayWindow: 12*time.Hour + 10*time.Minute, CommitWindow: 5*time.Minute + 30*time.Second,
		Replayable: func(id string) bool { return !strings.HasPrefix(id, "write-") }}
	for _, c := range []struct {
		after time.Duration
		want  []int64
	}{{time.Hour, []int64{1, 2}}, {13 * time.Hour, []int64{3, 4, 5}}} {
		paimon.SetNow(p, func() time.Time { return time.Now().Add(c.after) })
		rep, err := p.Maintain(ctx, id, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Tasks[0].ExpiredSnapshots; !slices.Equal(got, c.want) {
			t.Errorf("%v later: expired %v, want %v", c.after, got, c.want)
		}
	}
}
