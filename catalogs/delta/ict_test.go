package delta_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// TestInCommitTimestamps: a table created with
// delta.enableInCommitTimestamps true has the writer feature
// inCommitTimestamp and the enablement properties (version 0, the
// create's timestamp); every commit's first action is commitInfo with an
// inCommitTimestamp (and timestamp) strictly above the one before, even
// when the clock goes back or stands still, and after a checkpoint (every
// two versions: the version after one still follows the checkpointed
// version's timestamp), and the commit's outcome and txn carry that time.
func TestInCommitTimestamps(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := []time.Duration{0, 0, -time.Hour, 0, time.Second}
	// The clock is read by the commit rounds and the checkpoint writer on
	// goroutines of the provider's: the step it is at is atomic.
	var step atomic.Int64
	delta.SetNow(p, func() time.Time {
		d := clock[min(int(step.Load()), len(clock)-1)]
		return base.Add(d)
	})
	ctx := context.Background()
	id := ident("default", "ict")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{dcodec.PropInCommitTimestamps: "true", dcodec.PropCheckpointInterval: "2"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "default", "ict")
	var outs []int64
	for i := 1; i < len(clock); i++ {
		step.Store(int64(i))
		out := commitRows(t, p, id, int64(10*i), 2, i == 3)
		outs = append(outs, out.CommittedAt.UnixMilli())
	}
	var prev int64
	for v := int64(0); v < int64(len(clock)); v++ {
		lines := logLines(t, dir, v)
		raw, ok := lines[0]["commitInfo"]
		if !ok {
			t.Fatalf("version %d: first action %v, want commitInfo", v, lines[0])
		}
		var ci struct {
			ICT       *int64 `json:"inCommitTimestamp"`
			Timestamp int64  `json:"timestamp"`
		}
		if err := json.Unmarshal(raw, &ci); err != nil || ci.ICT == nil {
			t.Fatalf("version %d: commitInfo %s without inCommitTimestamp", v, raw)
		}
		if *ci.ICT <= prev || ci.Timestamp != *ci.ICT {
			t.Errorf("version %d: inCommitTimestamp %d (timestamp %d) after %d: want strictly increasing, timestamp equal", v, *ci.ICT, ci.Timestamp, prev)
		}
		if v == 0 {
			var md struct {
				Configuration map[string]string `json:"configuration"`
			}
			var pr struct {
				WriterFeatures []string `json:"writerFeatures"`
			}
			for _, l := range lines {
				if b, ok := l["metaData"]; ok {
					_ = json.Unmarshal(b, &md)
				}
				if b, ok := l["protocol"]; ok {
					_ = json.Unmarshal(b, &pr)
				}
			}
			if md.Configuration[dcodec.PropInCommitTimestampEnablementVersion] != "0" || md.Configuration[dcodec.PropInCommitTimestampEnablementTimestamp] != jsonInt(*ci.ICT) {
				t.Errorf("configuration %v, want enablement version 0 at %d", md.Configuration, *ci.ICT)
			}
			if !slices.Contains(pr.WriterFeatures, dcodec.FeatureInCommitTimestamp) {
				t.Errorf("writer features %v, want inCommitTimestamp", pr.WriterFeatures)
			}
		} else if outs[v-1] != *ci.ICT {
			t.Errorf("version %d: outcome's time %d, the inCommitTimestamp %d", v, outs[v-1], *ci.ICT)
		}
		prev = *ci.ICT
	}
	if want := base.UnixMilli() + 3; prev != base.Add(time.Second).UnixMilli() || outs[2] != want {
		t.Errorf("times %v, want the clock's where it is ahead, one past the last where it is not", outs)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }
