package delta

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEncodeCheckpoint: the checkpoint of each fixture's latest snapshot, alone in a log,
// replays to the same snapshot (protocol, metadata, files with their stats and partition
// values, app transactions, domains), its _last_checkpoint parses with a valid checksum,
// and tombstones are kept only while delta.deletedFileRetentionDuration has not expired.
func TestEncodeCheckpoint(t *testing.T) {
	ctx := context.Background()
	for _, table := range []string{"appends", "checkpoint", "partitioned", "replace", "colmap"} {
		t.Run(table, func(t *testing.T) {
			want, err := Load(ctx, loadDirLog(t, table), -1)
			if err != nil {
				t.Fatal(err)
			}
			if table == "replace" && len(want.Tombstones) == 0 {
				t.Fatal("the replace fixture has no tombstones: the retention case tests nothing")
			}
			var newest int64
			for _, r := range want.Tombstones {
				if r.DeletionTimestamp != nil && *r.DeletionTimestamp > newest {
					newest = *r.DeletionTimestamp
				}
			}
			for _, tc := range []struct {
				name       string
				now        time.Time
				tombstones int
			}{
				{"retained", time.UnixMilli(newest).Add(time.Hour), len(want.Tombstones)},
				{"expired", time.UnixMilli(newest).Add(DefaultDeletedFileRetention + time.Hour), 0},
			} {
				cp, err := EncodeCheckpoint(want, tc.now)
				if err != nil {
					t.Fatal(err)
				}
				lc, err := ParseLastCheckpoint(cp.Last)
				if err != nil || lc.Checksum == "" {
					t.Fatalf("%s: _last_checkpoint %s: %v (checksum %q)", tc.name, cp.Last, err, lc.Checksum)
				}
				if lc.Version != want.Version || lc.Size != cp.Actions || *lc.NumOfAddFiles != int64(len(want.Files)) || *lc.SizeInBytes != int64(len(cp.Parquet)) {
					t.Fatalf("%s: _last_checkpoint %s, want version %d, %d adds", tc.name, cp.Last, want.Version, len(want.Files))
				}
				got, err := Load(ctx, memLog{ClassicCheckpointName(want.Version): cp.Parquet, LastCheckpointName: cp.Last}, -1)
				if err != nil {
					t.Fatalf("%s: replay from the checkpoint: %v", tc.name, err)
				}
				if got.Version != want.Version || got.Checkpoint != ClassicCheckpointName(want.Version) {
					t.Fatalf("%s: version %d from %q", tc.name, got.Version, got.Checkpoint)
				}
				if !reflect.DeepEqual(got.Protocol, want.Protocol) || !reflect.DeepEqual(got.Metadata, want.Metadata) {
					t.Fatalf("%s: protocol %+v metadata %+v\nwant %+v %+v", tc.name, got.Protocol, got.Metadata, want.Protocol, want.Metadata)
				}
				if !reflect.DeepEqual(got.Files, want.Files) {
					t.Fatalf("%s: files differ:\n%+v\nwant\n%+v", tc.name, got.Files, want.Files)
				}
				if !reflect.DeepEqual(got.Txns, want.Txns) || !reflect.DeepEqual(got.Domains, want.Domains) {
					t.Fatalf("%s: txns %v domains %v, want %v %v", tc.name, got.Txns, got.Domains, want.Txns, want.Domains)
				}
				if len(got.Tombstones) != tc.tombstones {
					t.Fatalf("%s: %d tombstones, want %d", tc.name, len(got.Tombstones), tc.tombstones)
				}
				for _, r := range got.Tombstones {
					if r.Stats != "" || r.Tags != nil {
						t.Fatalf("%s: tombstone %s keeps stats or tags", tc.name, r.Path)
					}
				}
			}
		})
	}
}

// TestEncodeCheckpointV2: on a table with v2Checkpoint the classic checkpoint follows the
// V2 spec (one checkpointMetadata row at its version), and replays.
func TestEncodeCheckpointV2(t *testing.T) {
	ctx := context.Background()
	s, err := Load(ctx, loadDirLog(t, "appends"), -1)
	if err != nil {
		t.Fatal(err)
	}
	s.Protocol = Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureV2Checkpoint}, WriterFeatures: []string{FeatureV2Checkpoint}}
	cp, err := EncodeCheckpoint(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	acts, err := ParseCheckpointParquet(ctx, "cp", cp.Parquet)
	if err != nil {
		t.Fatal(err)
	}
	var metas []int64
	for _, a := range acts {
		if a.CheckpointMetadata != nil {
			metas = append(metas, a.CheckpointMetadata.Version)
		}
	}
	if !reflect.DeepEqual(metas, []int64{s.Version}) {
		t.Fatalf("checkpointMetadata versions %v, want [%d]", metas, s.Version)
	}
	got, err := Load(ctx, memLog{ClassicCheckpointName(s.Version): cp.Parquet}, -1)
	if err != nil || !reflect.DeepEqual(got.Protocol, s.Protocol) || len(got.Files) != len(s.Files) {
		t.Fatalf("replay: %v, %+v, %d files", err, got, len(got.Files))
	}
}

// TestEncodeCheckpointStatsOptions: delta.checkpoint.writeStatsAsJson false leaves the
// adds' stats out; writeStatsAsStruct true, which asks for parsed stats this writer does
// not produce, refuses the checkpoint.
func TestEncodeCheckpointStatsOptions(t *testing.T) {
	ctx := context.Background()
	s, err := Load(ctx, loadDirLog(t, "appends"), -1)
	if err != nil {
		t.Fatal(err)
	}
	s.Metadata.Configuration = map[string]string{"delta.checkpoint.writeStatsAsJson": "false"}
	cp, err := EncodeCheckpoint(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(ctx, memLog{ClassicCheckpointName(s.Version): cp.Parquet}, -1)
	if err != nil || len(got.Files) != len(s.Files) {
		t.Fatalf("replay: %v", err)
	}
	for i, f := range got.Files {
		if f.Stats != "" || s.Files[i].Stats == "" {
			t.Fatalf("add %s: stats %q in the checkpoint (the log's: %q)", f.Path, f.Stats, s.Files[i].Stats)
		}
	}
	s.Metadata.Configuration = map[string]string{"delta.checkpoint.writeStatsAsStruct": "true"}
	if _, err := EncodeCheckpoint(s, time.Now()); err == nil || !strings.Contains(err.Error(), "writeStatsAsStruct") {
		t.Fatalf("writeStatsAsStruct: %v, want a refusal naming it", err)
	}
}

// TestEncodeV2Checkpoint: on a table with v2Checkpoint the UUID-named checkpoint is a
// top-level file of the non-file actions, one checkpointMetadata at its version and one
// sidecar action naming a sidecar of the adds and removes alone; the two replay to the
// snapshot; a snapshot without files has no sidecar; a table without the feature is refused.
func TestEncodeV2Checkpoint(t *testing.T) {
	ctx := context.Background()
	v2 := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{FeatureV2Checkpoint}, WriterFeatures: []string{FeatureV2Checkpoint}}
	const id, sid = "6f1c3c1e-8a4e-4b0e-9a55-0c6f3b7f2a10", "0b5e2f7a-1c3d-4e5f-8a9b-7c6d5e4f3a21"
	for _, table := range []string{"appends", "replace", "partitioned", "colmap"} {
		t.Run(table, func(t *testing.T) {
			want, err := Load(ctx, loadDirLog(t, table), -1)
			if err != nil {
				t.Fatal(err)
			}
			want.Protocol = v2
			now := time.Now()
			cp, err := EncodeV2Checkpoint(want, now, id, sid)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Name != fmt.Sprintf("%020d.checkpoint.%s.parquet", want.Version, id) || cp.SidecarName != sid+".parquet" {
				t.Fatalf("names %s, %s", cp.Name, cp.SidecarName)
			}
			top, err := ParseCheckpointParquet(ctx, cp.Name, cp.Parquet)
			if err != nil {
				t.Fatal(err)
			}
			var metas, sidecars, files int
			for _, a := range top {
				switch {
				case a.CheckpointMetadata != nil:
					metas++
					if a.CheckpointMetadata.Version != want.Version {
						t.Errorf("checkpointMetadata version %d, want %d", a.CheckpointMetadata.Version, want.Version)
					}
				case a.Sidecar != nil:
					sidecars++
					if a.Sidecar.Path != cp.SidecarName || a.Sidecar.SizeInBytes != int64(len(cp.Sidecar)) || a.Sidecar.ModificationTime != now.UnixMilli() {
						t.Errorf("sidecar action %+v, want %s of %d bytes", a.Sidecar, cp.SidecarName, len(cp.Sidecar))
					}
				case a.Add != nil || a.Remove != nil:
					files++
				}
			}
			if metas != 1 || sidecars != 1 || files != 0 {
				t.Fatalf("top-level file: %d checkpointMetadata, %d sidecars, %d file actions; want 1, 1, 0", metas, sidecars, files)
			}
			side, err := ParseCheckpointParquet(ctx, cp.SidecarName, cp.Sidecar)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(top)+len(side)) != cp.Actions {
				t.Errorf("%d actions counted, the files hold %d", cp.Actions, len(top)+len(side))
			}
			lc, err := ParseLastCheckpoint(cp.Last)
			if err != nil || lc.Version != want.Version || lc.Size != cp.Actions || *lc.NumOfAddFiles != int64(len(want.Files)) {
				t.Fatalf("_last_checkpoint %s: %v", cp.Last, err)
			}
			got, err := Load(ctx, memLog{cp.Name: cp.Parquet, "_sidecars/" + cp.SidecarName: cp.Sidecar, LastCheckpointName: cp.Last}, -1)
			if err != nil {
				t.Fatalf("replay from the checkpoint: %v", err)
			}
			if got.Checkpoint != cp.Name || !reflect.DeepEqual(got.Protocol, want.Protocol) || !reflect.DeepEqual(got.Metadata, want.Metadata) {
				t.Fatalf("replayed from %q: %+v %+v", got.Checkpoint, got.Protocol, got.Metadata)
			}
			if !reflect.DeepEqual(got.Files, want.Files) || len(got.Tombstones) != len(want.Tombstones) {
				t.Fatalf("files or tombstones differ: %d/%d files, %d/%d tombstones", len(got.Files), len(want.Files), len(got.Tombstones), len(want.Tombstones))
			}
			if !reflect.DeepEqual(got.Txns, want.Txns) || !reflect.DeepEqual(got.Domains, want.Domains) {
				t.Fatalf("txns %v domains %v, want %v %v", got.Txns, got.Domains, want.Txns, want.Domains)
			}
		})
	}
	t.Run("no files", func(t *testing.T) {
		s, err := Load(ctx, loadDirLog(t, "appends"), 0)
		if err != nil {
			t.Fatal(err)
		}
		s.Protocol, s.Files, s.Tombstones = v2, nil, nil
		cp, err := EncodeV2Checkpoint(s, time.Now(), id, sid)
		if err != nil || cp.SidecarName != "" || cp.Sidecar != nil {
			t.Fatalf("%v: sidecar %q", err, cp.SidecarName)
		}
		if _, err := Load(ctx, memLog{cp.Name: cp.Parquet}, -1); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("without the feature", func(t *testing.T) {
		s, err := Load(ctx, loadDirLog(t, "appends"), -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := EncodeV2Checkpoint(s, time.Now(), id, sid); err == nil || !strings.Contains(err.Error(), FeatureV2Checkpoint) {
			t.Fatalf("%v, want a refusal naming %s", err, FeatureV2Checkpoint)
		}
	})
}
