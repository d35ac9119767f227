package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// commitRows appends rows [from, from+n) of catalogtest.Schema as one
// commit (an overwrite when replace).
func commitRows(t *testing.T, p interface {
	catalogs.Provider
	catalogs.Overwriter
}, id catalogs.TableIdent, from, n int64, replace bool) catalogs.CommitOutcome {
	t.Helper()
	ctx := context.Background()
	b := catalogtest.Batch(from, n)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	var out catalogs.CommitOutcome
	if replace {
		out, err = p.CommitOverwrite(ctx, id, "", []catalogs.WriteReceipt{r})
	} else {
		out, err = p.Commit(ctx, id, []catalogs.WriteReceipt{r})
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckpoint: twelve commits to a partitioned table (an overwrite at
// version 4, so the checkpoint holds tombstones) leave a classic
// checkpoint at version 10 and a _last_checkpoint naming it, and none at
// other versions. With the commits before it deleted, the gateway still
// reads every row (it replays from the checkpoint), and so does delta-rs,
// value by value, when FLIGHTGW_DELTALAKE or the worktree's .venv-delta
// has it.
func TestCheckpoint(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "cp")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"partition": "name"}); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for v := int64(1); v <= 12; v++ {
		if v == 4 {
			want = nil
		}
		out := commitRows(t, p, id, v*10, 3, v == 4)
		if out.SnapshotID != v {
			t.Fatalf("commit %d landed at version %d", v, out.SnapshotID)
		}
		want = append(want, v*10, v*10+1, v*10+2)
	}
	// The round writes the checkpoint once its commits are answered:
	// Close waits for the rounds.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(wh, "default", "cp", "_delta_log")
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var cps []string
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".parquet" {
			cps = append(cps, e.Name())
		}
	}
	if !slices.Equal(cps, []string{dcodec.ClassicCheckpointName(10)}) {
		t.Fatalf("checkpoints %v, want only version 10's", cps)
	}
	lc, err := dcodec.ParseLastCheckpoint(mustRead(t, filepath.Join(logDir, dcodec.LastCheckpointName)))
	if err != nil || lc.Version != 10 || lc.Checksum == "" || *lc.NumOfAddFiles != 21 {
		t.Fatalf("_last_checkpoint %+v, %v; want version 10 with 21 adds and a checksum", lc, err)
	}
	acts, err := dcodec.ParseCheckpointParquet(ctx, "cp", mustRead(t, filepath.Join(logDir, cps[0])))
	if err != nil {
		t.Fatal(err)
	}
	var removes int
	for _, a := range acts {
		if a.Remove != nil {
			removes++
		}
	}
	if removes != 9 {
		t.Fatalf("checkpoint holds %d tombstones, want the overwrite's 9", removes)
	}
	for v := int64(0); v < 10; v++ {
		if err := os.Remove(filepath.Join(logDir, dcodec.CommitName(v))); err != nil {
			t.Fatal(err)
		}
	}
	bs, n, err := scanAll(t, p, id)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("scan after removing versions 0-9: %d rows, %v; want %d", n, err, len(want))
	}
	var got []int64
	for _, b := range bs {
		for i := 0; i < int(b.NumRows()); i++ {
			got = append(got, b.Column(0).(interface{ Value(int) int64 }).Value(i))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// The table can still be written after the cleanup: replay starts at
	// the checkpoint.
	commitRows(t, p, id, 200, 1, false)
	want = append(want, 200)

	py := deltaPython(t)
	if py == "" {
		t.Log("no deltalake (FLIGHTGW_DELTALAKE or .venv-delta): the delta-rs read is skipped")
		return
	}
	dr := readDeltalake(t, py, filepath.Join(wh, "default", "cp"))
	if dr.Version != 13 || !slices.Equal(dr.Columns, []string{"id", "name"}) || len(dr.Rows) != len(want) {
		t.Fatalf("deltalake reads version %d, columns %v, %d rows; want 13, [id name], %d", dr.Version, dr.Columns, len(dr.Rows), len(want))
	}
	for i, r := range dr.Rows {
		if r[0] == nil || r[1] == nil || *r[0] != fmt.Sprint(want[i]) || *r[1] != fmt.Sprintf("row-%d", want[i]) {
			t.Errorf("deltalake row %d: %v, want %d row-%d", i, r, want[i], want[i])
		}
	}
}

// deltalakeRead is what integration/delta/read_table.py prints.
type deltalakeRead struct {
	Version int64
	Columns []string
	Rows    [][]*string
}

// readDeltalake has delta-rs read the table at dir.
func readDeltalake(t *testing.T, py, dir string) deltalakeRead {
	t.Helper()
	out, err := exec.Command(py, "../../integration/delta/read_table.py", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("deltalake: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var dr deltalakeRead
	if err := json.Unmarshal(out, &dr); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return dr
}

// deltaPython is the Python of FLIGHTGW_DELTALAKE, or of the worktree's
// .venv-delta (make delta-check makes it); "" when neither.
func deltaPython(t *testing.T) string {
	if py := os.Getenv("FLIGHTGW_DELTALAKE"); py != "" {
		return py
	}
	py, err := filepath.Abs("../../.venv-delta/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		return ""
	}
	return py
}

// TestCheckpointFailureKeepsCommit: a checkpoint that cannot be written
// (here _last_checkpoint, a directory in the way) does not fail the
// commit that was due it: the commit lands, the table reads.
func TestCheckpointFailureKeepsCommit(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "cpf")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(wh, "default", "cpf", "_delta_log", dcodec.LastCheckpointName, "x")
	if err := os.MkdirAll(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	for v := int64(1); v <= 10; v++ {
		if out := commitRows(t, p, id, v, 1, false); out.SnapshotID != v {
			t.Fatalf("commit %d landed at %d", v, out.SnapshotID)
		}
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 10 {
		t.Fatalf("scan: %d rows, %v; want 10", n, err)
	}
}

// TestCheckpointInterval: a table whose delta.checkpointInterval is 3
// (set by another writer's metaData) is checkpointed at versions 3 and 6.
func TestCheckpointInterval(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "cpi")
	dir := filepath.Join(wh, "default", "cpi")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	var md dcodec.Metadata
	for _, l := range logLines(t, dir, 0) {
		if raw, ok := l["metaData"]; ok {
			acts, err := dcodec.ParseCommit("v0", append(append([]byte(`{"metaData":`), raw...), '}', '\n'))
			if err != nil {
				t.Fatal(err)
			}
			md = *acts[0].MetaData
		}
	}
	md.Configuration = map[string]string{"delta.checkpointInterval": "3"}
	enc, err := dcodec.EncodeCommit([]dcodec.Action{{MetaData: &md}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", dcodec.CommitName(1)), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	for v := int64(2); v <= 7; v++ {
		commitRows(t, p, id, v, 1, false)
	}
	if err := p.Close(); err != nil { // the rounds' checkpoints
		t.Fatal(err)
	}
	var cps []string
	ents, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".parquet" {
			cps = append(cps, e.Name())
		}
	}
	if want := []string{dcodec.ClassicCheckpointName(3), dcodec.ClassicCheckpointName(6)}; !slices.Equal(cps, want) {
		t.Fatalf("checkpoints %v, want %v", cps, want)
	}
}
