package delta

import (
	"testing"

	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// TestCheckpointCacheSidecars: the cache keeps a V2 checkpoint's
// sidecars beside it (before, a sidecar was never kept, so every replay
// of a table with sidecars decoded them again); a newer checkpoint
// replaces the entry and its sidecars; an older one, or a sidecar with no
// entry, displaces nothing.
func TestCheckpointCacheSidecars(t *testing.T) {
	l := storeLog{dir: "/w/t", cache: &checkpoints{}}
	top8, top9 := dcodec.UUIDCheckpointName(8, "6f1c3c1e-8a4e-4b0e-9a55-0c6f3b7f2a10", false), dcodec.UUIDCheckpointName(9, "0b5e2f7a-1c3d-4e5f-8a9b-7c6d5e4f3a21", false)
	const side = dcodec.SidecarDir + "/0b5e2f7a-1c3d-4e5f-8a9b-7c6d5e4f3a21.parquet"
	acts := func(p string) []dcodec.Action { return []dcodec.Action{{Add: &dcodec.AddFile{Path: p}}} }
	has := func(name, path string) bool {
		got, ok := l.CheckpointActions(name)
		return ok && len(got) == 1 && got[0].Add != nil && got[0].Add.Path == path
	}

	l.KeepCheckpointActions(side, acts("orphan"))
	if _, ok := l.CheckpointActions(side); ok {
		t.Fatal("a sidecar read before any checkpoint was kept")
	}
	l.KeepCheckpointActions(top8, acts("top8"))
	l.KeepCheckpointActions(side, acts("side"))
	if !has(top8, "top8") || !has(side, "side") {
		t.Fatal("the checkpoint at 8 and its sidecar are not both kept")
	}
	l.KeepCheckpointActions(top8, acts("top8"))
	if !has(side, "side") {
		t.Fatal("keeping the same checkpoint again dropped its sidecar")
	}
	l.KeepCheckpointActions(dcodec.ClassicCheckpointName(4), acts("top4"))
	if !has(top8, "top8") || !has(side, "side") {
		t.Fatal("an older checkpoint displaced the newer one")
	}
	l.KeepCheckpointActions(top9, acts("top9"))
	if !has(top9, "top9") {
		t.Fatal("the newer checkpoint at 9 is not kept")
	}
	if _, ok := l.CheckpointActions(side); ok {
		t.Fatal("the checkpoint at 8's sidecar outlived its entry")
	}
}
