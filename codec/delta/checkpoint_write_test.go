package delta

import (
	"context"
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
