package iceberg

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// WriterKey is the snapshot summary property that names the provider (one
// per catalog per gateway process, random at Open) whose commit wrote the
// snapshot. Snapshot expiry reads it: a snapshot this provider wrote, whose
// commit has answered its caller, is no commit's to look up any more, and
// may expire however young (unsettled); any other snapshot may be the one a
// commit of another process is about to look its id up in, and waits out
// the commit window.
const WriterKey = "flightgw.writer"

// newWriterID is a provider's WriterKey value.
func newWriterID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

// maxDoubt bounds how long unsettled remembers a commit that answered an
// error: past any commit window a request gives.
const maxDoubt = time.Hour

// unsettled tracks the commit ids of this provider whose writers may still
// look them up in the table's snapshots: commits under way (from Commit's
// call to its answer; a round that lost a reply finds its snapshot by id),
// and commits that answered an error (their caller looks the id up once
// more, txn's landed-commit check). The zero value is ready.
type unsettled struct {
	mu    sync.Mutex
	under map[string]int       // commits under way, by id (two writers may share one)
	doubt map[string]time.Time // ids whose commit answered an error, and when
}

// begin marks a commit under id as under way.
func (p *unsettled) begin(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.under == nil {
		p.under = map[string]int{}
	}
	p.under[id]++
}

// end marks the commit under id answered, with err: an error leaves the
// id in doubt for its caller's lookup.
func (p *unsettled) end(id string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.under[id]--; p.under[id] <= 0 {
		delete(p.under, id)
	}
	if err == nil {
		return
	}
	if p.doubt == nil {
		p.doubt = map[string]time.Time{}
	}
	now := time.Now()
	p.doubt[id] = now
	for k, at := range p.doubt { // errors are rare: the scan is cheap
		if now.Sub(at) > maxDoubt {
			delete(p.doubt, k)
		}
	}
}

// open reports whether a writer of this provider may still look id up:
// its commit is under way, or answered an error less than window ago.
func (p *unsettled) open(id string, window time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.under[id] > 0 {
		return true
	}
	at, ok := p.doubt[id]
	return ok && time.Since(at) < window
}
