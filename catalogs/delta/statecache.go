package delta

import (
	"sync"

	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// replays keeps, per table directory, the state the newest replay of its
// log reached (dcodec.StateCache): a query resolves a table twice and
// scans it once, a commit loads it once per attempt, and each of those
// loads otherwise replayed the log again from the checkpoint (decoding
// the checkpoint's actions into the state, and reading the commit of the
// checkpoint's version for its commitInfo: after OPTIMIZE, a commit of
// one remove per rewritten file). Every load still lists the log, so
// commits and compare-and-swap retries see the latest version as before.
type replays struct {
	mu sync.Mutex
	m  map[string]*dcodec.Replayed // by table directory
}

func (l storeLog) ReplayedState() *dcodec.Replayed {
	if l.states == nil {
		return nil
	}
	l.states.mu.Lock()
	defer l.states.mu.Unlock()
	return l.states.m[l.dir]
}

func (l storeLog) KeepReplayedState(r *dcodec.Replayed) {
	if l.states == nil {
		return
	}
	l.states.mu.Lock()
	defer l.states.mu.Unlock()
	if old, ok := l.states.m[l.dir]; ok && old.Version() >= r.Version() {
		return
	}
	if l.states.m == nil {
		l.states.m = map[string]*dcodec.Replayed{}
	}
	if _, ok := l.states.m[l.dir]; !ok && len(l.states.m) >= maxCachedTables {
		for k := range l.states.m { // any one: tables beyond the bound take turns
			delete(l.states.m, k)
			break
		}
	}
	l.states.m[l.dir] = r
}

func (l storeLog) DropReplayedState() {
	if l.states == nil {
		return
	}
	l.states.drop(l.dir)
}

// drop forgets the state of the table at dir (dropped, or created again).
func (r *replays) drop(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, dir)
}
