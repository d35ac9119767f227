package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// maintainedTable builds a table of many small appends (ids 10*k ..
// 10*k+9 in append k), a tag on the third, and maintenance twice: expiry,
// rewrite_data_files and rewrite_manifests after twelve appends, then two
// more appends and expiry again (keeping the four newest snapshots of main
// and the tag). It returns the ids each retained snapshot holds, by the
// number of appends it has (the rewrites hold all twelve).
func maintainedTable(t *testing.T) (*Provider, catalogs.TableIdent, map[int64]int64) {
	t.Helper()
	p, _ := openTemp(t)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "maintained"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"default", "maintained"}
	tbl, err := p.cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(ice.Properties{
		table.WriteTargetFileSizeBytesKey: "1048576",
		table.MaxSnapshotAgeMsKey:         "1",
		table.MinSnapshotsToKeepKey:       "4",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	appends := map[int64]int64{} // snapshot -> appends it holds
	appendN := func(from, to int64) {
		t.Helper()
		for k := from; k < to; k++ {
			out, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stageIn(t, p, id, k*10, 10)})
			if err != nil {
				t.Fatal(err)
			}
			appends[out.SnapshotID] = k + 1
			if k == 2 {
				if _, _, err := p.cat.CommitTable(ctx, ident, nil, []table.Update{
					table.NewSetSnapshotRefUpdate("v3", out.SnapshotID, table.TagRef, 0, 0, 0)}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	maintain := func(tasks ...string) {
		t.Helper()
		time.Sleep(20 * time.Millisecond) // every snapshot older than a max age of 1 ms
		rep, err := p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: tasks})
		if err != nil {
			t.Fatalf("Maintain %v: %v", tasks, err)
		}
		for _, tr := range rep.Tasks {
			if !tr.Committed {
				t.Fatalf("maintenance task %s committed nothing: %+v", tr.Task, tr)
			}
		}
		tbl, err := p.load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if cur := tbl.CurrentSnapshot(); appends[cur.SnapshotID] == 0 {
			appends[cur.SnapshotID] = 12 // a rewrite's snapshot
		}
	}
	appendN(0, 12)
	maintain(catalogs.TaskExpireSnapshots, catalogs.TaskRewriteDataFiles)
	maintain(catalogs.TaskRewriteManifests)
	appendN(12, 14)
	maintain(catalogs.TaskExpireSnapshots)

	tbl, err = p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	retained := map[int64]int64{}
	for _, s := range tbl.Metadata().Snapshots() {
		n, ok := appends[s.SnapshotID]
		if !ok {
			t.Fatalf("snapshot %d retained that the test did not make", s.SnapshotID)
		}
		retained[s.SnapshotID] = n
	}
	// The four newest of main (the rewrites of twelve appends, then
	// thirteen and fourteen appends) and the tag's (three appends).
	counts := slices.Sorted(maps.Values(retained))
	if !slices.Equal(counts, []int64{3, 12, 12, 13, 14}) {
		t.Fatalf("retained snapshots hold %v appends, want [3 12 12 13 14]", counts)
	}
	return p, id, retained
}

// gatewayRowsAt is what the gateway's own Scan reads at snapshot snap, as
// the readers render rows.
func gatewayRowsAt(t *testing.T, p *Provider, id catalogs.TableIdent, snap int64) []map[string]any {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{SnapshotID: &snap})
	if err != nil {
		t.Fatalf("scan at snapshot %d: %v", snap, err)
	}
	defer res.Reader.Release()
	var out []map[string]any
	for res.Reader.Next() {
		b, err := res.Reader.RecordBatch().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var rows []map[string]any
		if err := json.Unmarshal(b, &rows); err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatalf("scan at snapshot %d: %v", snap, err)
	}
	return out
}

// rowsOfAppends are the rows of the first n appends of maintainedTable.
func rowsOfAppends(n int64) []map[string]any {
	var out []map[string]any
	for i := range n * 10 {
		out = append(out, map[string]any{"id": float64(i), "name": fmt.Sprintf("row-%d", i)})
	}
	return out
}

// TestOtherReadersReadMaintainedTable: after expiry, rewrite_data_files
// and rewrite_manifests on a table of many small appends (and expiry
// again after more appends, removing the files the rewrite replaced that
// no retained snapshot reaches), Iceberg Java 1.10 and DuckDB's iceberg
// extension read the current snapshot and, by time travel, every retained
// snapshot (the tag's, from before the rewrite, included) value by value
// as the gateway's own Scan reads it, and list exactly the retained
// snapshots.
func TestOtherReadersReadMaintainedTable(t *testing.T) {
	cp := JavaClasspath(t)
	duck := duckDBIceberg(t)
	if cp == "" && duck == "" {
		t.Skip("neither Iceberg Java nor DuckDB's iceberg extension is set up (make iceberg-pyiceberg-check)")
	}
	p, id, retained := maintainedTable(t)
	tbl, err := p.load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	loc := tbl.MetadataLocation()
	snaps := slices.Sorted(maps.Keys(retained))
	want := map[int64][]map[string]any{}
	for _, s := range snaps {
		want[s] = gatewayRowsAt(t, p, id, s)
		sameRows(t, fmt.Sprintf("the gateway at snapshot %d", s), want[s], rowsOfAppends(retained[s]))
	}
	sameSnaps := func(t *testing.T, who string, got []int64) {
		t.Helper()
		slices.Sort(got)
		if !slices.Equal(got, snaps) {
			t.Errorf("%s lists snapshots %v, want the retained %v", who, got, snaps)
		}
	}

	if cp != "" {
		var args []string
		for _, s := range snaps {
			args = append(args, loc+"#"+strconv.FormatInt(s, 10))
		}
		for i, raw := range JavaRead(t, cp, args...) {
			var v struct {
				Snapshot  int64            `json:"snapshot"`
				Rows      []map[string]any `json:"rows"`
				Snapshots []int64          `json:"snapshots"`
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("Iceberg Java output %s: %v", raw, err)
			}
			if v.Snapshot != snaps[i] {
				t.Fatalf("Iceberg Java read snapshot %d, asked for %d", v.Snapshot, snaps[i])
			}
			sameRows(t, fmt.Sprintf("Iceberg Java at snapshot %d", v.Snapshot), v.Rows, want[v.Snapshot])
			sameSnaps(t, "Iceberg Java", v.Snapshots)
		}
		cur := JavaRead(t, cp, loc)
		var v javaView
		if err := json.Unmarshal(cur[0], &v); err != nil {
			t.Fatal(err)
		}
		sameRows(t, "Iceberg Java at the current snapshot", v.Rows, want[tbl.CurrentSnapshot().SnapshotID])
	}

	if duck != "" {
		in, err := json.Marshal([]map[string]any{{"metadata": loc, "snapshots": snaps}})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(duck, filepath.Join("testdata", "duckdb_iceberg.py"))
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("duckdb_iceberg.py: %v\n%s", err, stderr.String())
		}
		var views []struct {
			duckView
			At        map[string][]map[string]any `json:"at"`
			Snapshots []int64                     `json:"snapshots"`
		}
		if err := json.Unmarshal(out, &views); err != nil || len(views) != 1 {
			t.Fatalf("duckdb_iceberg.py output %s: %v", out, err)
		}
		v := views[0]
		if v.Error != "" {
			t.Fatalf("DuckDB refuses the maintained table: %s", v.Error)
		}
		sameRows(t, "DuckDB at the current snapshot", v.Rows, want[tbl.CurrentSnapshot().SnapshotID])
		for _, s := range snaps {
			rows, ok := v.At[strconv.FormatInt(s, 10)]
			if !ok {
				t.Errorf("DuckDB did not read snapshot %d", s)
				continue
			}
			sameRows(t, fmt.Sprintf("DuckDB at snapshot %d", s), rows, want[s])
		}
		sameSnaps(t, "DuckDB", v.Snapshots)
	}
}
