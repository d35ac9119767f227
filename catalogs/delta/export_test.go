package delta

import (
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// SetNow makes p's clock now (commit times, tombstone and log expiry).
func SetNow(p *Provider, now func() time.Time) { p.now = now }

// SetReclaimBeforeRecheck runs fn between a reclaim's listing and its
// second read of the log; the returned func restores the default.
func SetReclaimBeforeRecheck(fn func(catalogs.TableIdent)) func() {
	reclaimBeforeRecheck = fn
	return func() { reclaimBeforeRecheck = nil }
}

// SetBeforeCommitWrite runs fn between a commit attempt's replay and its
// write of log version v; the returned func restores the default.
func SetBeforeCommitWrite(fn func(t catalogs.TableIdent, v int64)) func() {
	beforeCommitWrite = fn
	return func() { beforeCommitWrite = nil }
}

// SetLaneSpread sets the upload size past which another lane starts and
// returns the undo, so that a test reaches several lanes with little data.
func SetLaneSpread(n int64) func() {
	old := laneSpread
	laneSpread = n
	return func() { laneSpread = old }
}
