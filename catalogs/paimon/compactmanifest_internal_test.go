package paimon

import (
	"context"
	"slices"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestCompactMergesManifests: after compact rewrote an append table's
// twelve small files, the table's current snapshot is a COMPACT one whose
// manifests hold only the live file's ADD entry and whose delta is empty
// (Paimon's compact_manifest), the snapshot before it is the
// compaction's, with its DELETE entries, and both read every row once
// with the same record count. Before, the current snapshot was the
// compaction's: its reads decoded 12 ADD and 12 DELETE entries for one
// live file.
func TestCompactMergesManifests(t *testing.T) {
	ctx := context.Background()
	p, id := mergeTable(t, nil)
	for i := range int64(12) {
		commitRows(t, p, id, i*10, 10, false)
	}
	rep, err := p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact}})
	if err != nil || !rep.Tasks[0].Committed || rep.Tasks[0].RewrittenFiles != 12 {
		t.Fatalf("compact = %+v, %v: want 12 files rewritten", rep, err)
	}
	st, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.snap.ID != 14 || st.snap.CommitKind != kindCompact || st.snap.DeltaRecordCount != 0 || st.snap.TotalRecordCount != 120 {
		t.Fatalf("current snapshot %d %s, delta %d rows, total %d: want 14, a COMPACT one of no rows and 120 in all",
			st.snap.ID, st.snap.CommitKind, st.snap.DeltaRecordCount, st.snap.TotalRecordCount)
	}
	base, delta := manifests(t, p, id)
	if len(delta) != 0 {
		t.Errorf("the manifest compaction's delta names %d manifests, want none", len(delta))
	}
	var adds, deletes int64
	for _, m := range base {
		adds, deletes = adds+m.NumAdded, deletes+m.NumDeleted
	}
	if adds != 1 || deletes != 0 {
		t.Errorf("current manifests hold %d ADD and %d DELETE entries, want 1 and 0", adds, deletes)
	}
	prev, err := p.readSnapshot(ctx, id, st.dir, 13)
	if err != nil {
		t.Fatal(err)
	}
	if prev.CommitKind != kindCompact || prev.DeltaRecordCount != 0 || prev.TotalRecordCount != 120 {
		t.Errorf("snapshot 13 is %s of %d rows, total %d: want the compaction's", prev.CommitKind, prev.DeltaRecordCount, prev.TotalRecordCount)
	}
	_, deleted, err := p.deltaFiles(ctx, st, prev)
	if err != nil || len(deleted) != 12 {
		t.Errorf("the compaction's delta deletes %d files (%v), want 12", len(deleted), err)
	}
	if got := scanIDs(t, p, id); !slices.Equal(got, idRange(0, 120)) {
		t.Errorf("after compact the table reads %v, want 0..119 once each", got)
	}
	for _, snap := range []int64{13, 14} {
		plan, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{SnapshotID: &snap})
		if err != nil || plan.FilesTotal != 1 {
			t.Errorf("snapshot %d plans %+v, %v: want the compacted file", snap, plan, err)
		}
	}
}
