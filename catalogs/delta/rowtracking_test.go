package delta_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// TestRowTracking: a table created with delta.enableRowTracking true has
// the writer features rowTracking and domainMetadata and names its
// materialized columns; every add gets baseRowId past the high-water
// mark and defaultRowCommitVersion its version, and the commit the
// delta.rowTracking domainMetadata with the new mark. An append that
// loses its version to another writer's is given new ids on the retry
// (none reused); an overwrite's removes keep the ids of the files they
// remove.
func TestRowTracking(t *testing.T) {
	wh := t.TempDir()
	p, other := openLocal(t, wh), openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "rt")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{dcodec.PropEnableRowTracking: "true"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "default", "rt")
	for _, l := range logLines(t, dir, 0) {
		if b, ok := l["protocol"]; ok {
			var pr struct{ WriterFeatures []string }
			_ = json.Unmarshal(b, &pr)
			if !slices.Contains(pr.WriterFeatures, "rowTracking") || !slices.Contains(pr.WriterFeatures, "domainMetadata") {
				t.Errorf("writer features %v, want rowTracking and domainMetadata", pr.WriterFeatures)
			}
		}
		if b, ok := l["metaData"]; ok {
			var md struct{ Configuration map[string]string }
			_ = json.Unmarshal(b, &md)
			if md.Configuration[dcodec.PropMaterializedRowIDColumn] == "" || md.Configuration[dcodec.PropMaterializedRowCommitVersionColumn] == "" {
				t.Errorf("configuration %v, want the materialized column names", md.Configuration)
			}
		}
	}
	commitRows(t, p, id, 0, 3, false) // version 1: rows 0-2
	raced := false
	restore := delta.SetBeforeCommitWrite(func(_ catalogs.TableIdent, v int64) {
		if v == 2 && !raced {
			raced = true
			commitRows(t, other, id, 100, 4, false) // version 2: rows 3-6
		}
	})
	out := commitRows(t, p, id, 200, 5, false) // retried: version 3, rows 7-11
	restore()
	if out.SnapshotID != 3 || out.Retried == 0 {
		t.Fatalf("append: %+v, want version 3 after a retry", out)
	}
	commitRows(t, p, id, 300, 2, true) // version 4: an overwrite, rows 12-13

	type fileIDs struct{ base, ver int64 }
	want := map[int64]struct {
		adds    []fileIDs
		removes []fileIDs
		hwm     int64
	}{
		1: {adds: []fileIDs{{0, 1}}, hwm: 2},
		2: {adds: []fileIDs{{3, 2}}, hwm: 6},
		3: {adds: []fileIDs{{7, 3}}, hwm: 11},
		4: {adds: []fileIDs{{12, 4}}, removes: []fileIDs{{0, 1}, {3, 2}, {7, 3}}, hwm: 13},
	}
	for v := int64(1); v <= 4; v++ {
		var adds, removes []fileIDs
		hwm := int64(-100)
		for _, l := range logLines(t, dir, v) {
			var f struct {
				BaseRowID               *int64 `json:"baseRowId"`
				DefaultRowCommitVersion *int64 `json:"defaultRowCommitVersion"`
			}
			if b, ok := l["add"]; ok {
				_ = json.Unmarshal(b, &f)
				if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
					t.Fatalf("version %d: add %s without row ids", v, b)
				}
				adds = append(adds, fileIDs{*f.BaseRowID, *f.DefaultRowCommitVersion})
			}
			if b, ok := l["remove"]; ok {
				_ = json.Unmarshal(b, &f)
				if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
					t.Fatalf("version %d: remove %s without row ids", v, b)
				}
				removes = append(removes, fileIDs{*f.BaseRowID, *f.DefaultRowCommitVersion})
			}
			if b, ok := l["domainMetadata"]; ok {
				var dm dcodec.DomainMetadata
				_ = json.Unmarshal(b, &dm)
				var c struct{ RowIDHighWaterMark int64 }
				if dm.Domain != dcodec.RowTrackingDomain || json.Unmarshal([]byte(dm.Configuration), &c) != nil {
					t.Fatalf("version %d: domainMetadata %s", v, b)
				}
				hwm = c.RowIDHighWaterMark
			}
		}
		slices.SortFunc(removes, func(a, b fileIDs) int { return int(a.base - b.base) })
		w := want[v]
		if !slices.Equal(adds, w.adds) || !slices.Equal(removes, w.removes) || hwm != w.hwm {
			t.Errorf("version %d: adds %v, removes %v, high-water mark %d; want %v, %v, %d", v, adds, removes, hwm, w.adds, w.removes, w.hwm)
		}
	}
}
