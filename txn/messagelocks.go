package txn

import (
	"slices"
	"sync"
)

// tableLocks are per-table mutexes, held while a table's commit messages
// are checked and then committed or deleted. An entry lives while someone
// holds or waits for it.
type tableLocks struct {
	mu sync.Mutex
	m  map[string]*tableLock
}

type tableLock struct {
	sync.Mutex
	refs int
}

// lock takes the locks of keys, in sorted order so that two requests
// naming the same tables in another order cannot deadlock, and returns
// the function that releases them.
func (l *tableLocks) lock(keys []string) func() {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	held := make([]*tableLock, len(keys))
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*tableLock{}
	}
	for i, k := range keys {
		e := l.m[k]
		if e == nil {
			e = &tableLock{}
			l.m[k] = e
		}
		e.refs++
		held[i] = e
	}
	l.mu.Unlock()
	for _, e := range held {
		e.Lock()
	}
	return func() {
		for _, e := range held {
			e.Unlock()
		}
		l.mu.Lock()
		for i, e := range held {
			if e.refs--; e.refs == 0 {
				delete(l.m, keys[i])
			}
		}
		l.mu.Unlock()
	}
}
