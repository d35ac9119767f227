package server

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// While the live heap is small, the floor raises the GC percent and sets
// the memory limit to the floor; past it, gc_percent applies and the limit
// follows the live heap; stopped, the settings before come back.
func TestGCFloorFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	// The floor well above what the process holds already: the package's
	// other tests leave a heap, and with it near a fixed floor the raised
	// percent is less than 100 (it failed so once in CI, at 54).
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	floor := max(int64(64<<20), 4*int64(ms.Sys))
	stop := startGCFloor(floor, 30)
	if got := debug.SetMemoryLimit(-1); got != floor {
		t.Errorf("limit %d with a small live heap, want the floor %d", got, floor)
	}
	if got := debug.SetGCPercent(-1); got < 100 {
		t.Errorf("gc percent %d under the floor, want it raised", got)
	}
	live := make([][]byte, floor*3/2/(4<<20)) // past the floor
	for i := range live {
		live[i] = make([]byte, 4<<20)
	}
	want := int64(len(live)*(4<<20)) * 130 / 100
	var got int64
	for range 100 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the retune runs after the collection
		if got = debug.SetMemoryLimit(-1); got >= want {
			break
		}
	}
	if got < want {
		t.Errorf("limit %d with %d live, want at least %d", got, len(live)*(4<<20), want)
	}
	if got := debug.SetGCPercent(-1); got != 30 {
		t.Errorf("gc percent %d past the floor, want gc_percent 30", got)
	}
	runtime.KeepAlive(live)
	stop()
	if got := debug.SetGCPercent(-1); got != 30 {
		t.Errorf("gc percent %d after stop, want 30", got)
	}
	debug.SetGCPercent(30)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d after stop, want the one before (none)", got)
	}
}

// A floor of 0 or less leaves the GC alone.
func TestGCFloorOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(30))
	startGCFloor(-1, 30)()
	if got := debug.SetGCPercent(30); got != 30 {
		t.Errorf("gc percent %d, want 30", got)
	}
}
