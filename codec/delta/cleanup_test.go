package delta

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestExpiredLogFiles: metadata cleanup expires only what lies below the newest
// checkpoint not newer than the cutoff commit, keeping that checkpoint and its commit.
func TestExpiredLogFiles(t *testing.T) {
	day := 24 * time.Hour
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(v int64) time.Time { return base.Add(time.Duration(v) * day) } // commit v on day v
	commits := func(n int64, extra ...LogEntry) []LogEntry {
		var es []LogEntry
		for v := int64(0); v < n; v++ {
			es = append(es, LogEntry{CommitName(v), at(v)}, LogEntry{CommitName(v)[:20] + ".crc", at(v)})
		}
		return append(es, extra...)
	}
	cp := func(v int64) LogEntry { return LogEntry{ClassicCheckpointName(v), at(v)} }
	names := func(vs ...int64) []string {
		var out []string
		for _, v := range vs {
			out = append(out, CommitName(v), CommitName(v)[:20]+".crc")
		}
		return out
	}
	cutoff := func(v int64) time.Time { return at(v).Add(time.Hour) } // commits up to v are old enough
	for _, tc := range []struct {
		name    string
		entries []LogEntry
		cutoff  time.Time
		want    []string
	}{
		{"no checkpoint: nothing expires", commits(20), cutoff(15), nil},
		{"checkpoint newer than the cutoff commit: nothing", commits(20, cp(10)), cutoff(9), nil},
		{"checkpoint at the cutoff commit", commits(20, cp(10)), cutoff(10), names(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
		{"the newest checkpoint not after the cutoff", commits(30, cp(10), cp(20)), cutoff(15),
			names(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
		{"older checkpoints expire too", commits(30, cp(10), cp(20)), cutoff(25),
			append(names(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19), ClassicCheckpointName(10))},
		{"an incomplete multi-part checkpoint is no cutoff", commits(20,
			LogEntry{"00000000000000000010.checkpoint.0000000001.0000000002.parquet", at(10)}), cutoff(15), nil},
		{"a log compaction starting at or before the checkpoint", commits(12, cp(10),
			LogEntry{"00000000000000000005.00000000000000000011.compacted.json", at(11)},
			LogEntry{"00000000000000000011.00000000000000000011.compacted.json", at(11)}), cutoff(11),
			append(names(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), "00000000000000000005.00000000000000000011.compacted.json")},
		{"a commit time stepping back does not move the cutoff past a newer commit", []LogEntry{
			{CommitName(0), at(0)}, {CommitName(1), at(10)}, {CommitName(2), at(1)}, {ClassicCheckpointName(2), at(1)}},
			cutoff(5), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ExpiredLogFiles(tc.entries, tc.cutoff)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("expired %v\nwant    %v", got, want)
			}
		})
	}
	if got := LogCleanupCutoff(time.Date(2026, 3, 31, 15, 4, 0, 0, time.UTC), 30*day); !got.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("cutoff %v, want midnight UTC of 2026-03-01", got)
	}
}

// TestExpiredSidecars: metadata cleanup's steps 4 and 5. The sidecars the kept
// checkpoints reference (a UUID-named one here; a classic V1 one references none) stay;
// an unreferenced one goes once it is not newer than midnight UTC of the day before now;
// a checkpoint that cannot be read is an error (no sidecar may go).
func TestExpiredSidecars(t *testing.T) {
	ctx := context.Background()
	s, err := Load(ctx, loadDirLog(t, "appends"), -1)
	if err != nil {
		t.Fatal(err)
	}
	classic, err := EncodeCheckpoint(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Protocol = Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureV2Checkpoint}, WriterFeatures: []string{FeatureV2Checkpoint}}
	v2, err := EncodeV2Checkpoint(s, time.Now(), "6f1c3c1e-8a4e-4b0e-9a55-0c6f3b7f2a10", "0b5e2f7a-1c3d-4e5f-8a9b-7c6d5e4f3a21")
	if err != nil {
		t.Fatal(err)
	}
	log := memLog{ClassicCheckpointName(1): classic.Parquet, v2.Name: v2.Parquet}
	refs, err := ReferencedSidecars(ctx, log, []string{CommitName(1), ClassicCheckpointName(1), v2.Name, LastCheckpointName})
	if err != nil || len(refs) != 1 || !refs[v2.SidecarName] {
		t.Fatalf("referenced %v, %v; want only %s", refs, err, v2.SidecarName)
	}
	if _, err := ReferencedSidecars(ctx, log, []string{ClassicCheckpointName(2)}); err == nil {
		t.Fatal("a missing checkpoint: no error")
	}
	now := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	cut := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	got := ExpiredSidecars([]LogEntry{
		{Name: v2.SidecarName, Mod: cut.Add(-48 * time.Hour)},   // referenced: kept
		{Name: "old.parquet", Mod: cut.Add(-time.Hour)},         // unreferenced, old: expired
		{Name: "at-cutoff.parquet", Mod: cut},                   // not newer than the cutoff: expired
		{Name: "young.parquet", Mod: cut.Add(time.Millisecond)}, // a checkpoint under way: kept
	}, refs, now)
	if want := []string{"at-cutoff.parquet", "old.parquet"}; !slices.Equal(got, want) {
		t.Fatalf("expired %v, want %v", got, want)
	}
}
