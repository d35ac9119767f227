package lake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// Retry bounds a commit's compare-and-swap loop: the property parser
// (ParseCommon) fills it from commit.retry.*, the same names and defaults
// for every table format.
type Retry struct {
	// Retries is how many attempts after the first may lose the race.
	Retries int
	// MinWait and MaxWait bound the pause after a lost race: MinWait·2^n
	// capped at MaxWait, with full jitter (catalogs.Backoff).
	MinWait, MaxWait time.Duration
	// TotalTimeout bounds the whole loop, attempts and pauses.
	TotalTimeout time.Duration
}

// DefaultRetry is every table format's loop unless the catalog's
// properties say otherwise: many short pauses, since the writers a race
// is lost to are usually the gateway's own replicas committing at once.
var DefaultRetry = Retry{Retries: 50, MinWait: 5 * time.Millisecond, MaxWait: 2 * time.Second, TotalTimeout: time.Minute}

// ErrLost marks an attempt that lost the compare-and-swap: another commit
// landed first. Committer.Attempt wraps it; anything else ends the loop.
var ErrLost = errors.New("lost the compare-and-swap")

// Committer is one commit's side of the loop, which a table format
// implements on its own metadata; V is the table version it loads.
type Committer[V any] interface {
	// Load reads the table's current version.
	Load(ctx context.Context) (V, error)
	// Landed answers the commit from v when its commit id has landed
	// there already (done): did an earlier attempt, or a caller that
	// repeated the commit, land it?
	Landed(ctx context.Context, v V) (done bool, err error)
	// Claimed is the file check: the first of the commit's data files
	// that a snapshot of v newer than base adds, with that snapshot's id
	// ("" when none). The loop asks after every lost race, base being the
	// version the losing attempt was built on; first is true before the
	// first attempt, when base is the zero V and a backend checks what it
	// can tell landed since the caller's own replay check.
	Claimed(ctx context.Context, base, v V, first bool) (file string, snapshot int64, err error)
	// Attempt makes one attempt on v: nil when it landed, an error
	// wrapping ErrLost when another commit won, leaving nothing behind.
	Attempt(ctx context.Context, v V) error
	// Recover tells, after an attempt failed otherwise, whether it landed
	// all the same (a reply lost on the way back): done answers the
	// commit; else the loop returns the attempt's error.
	Recover(ctx context.Context, err error) (done bool)
}

// Run commits through c: load, "did it land?", the file check, attempt;
// after a lost race, a pause with jitter and again from a fresh load,
// within r. It returns how many races were lost; what names the table
// (or tables) in its errors, "table db.t". A data file another
// commit added meanwhile ends it with ErrFailedPrecondition naming the
// file and the snapshot: committing it again would add its rows twice.
func Run[V any](ctx context.Context, r Retry, what, commitID string, c Committer[V]) (retried uint32, err error) {
	if r.TotalTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.TotalTimeout)
		defer cancel()
	}
	var base V
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if retried > 0 {
				return retried, catalogs.Wrap(catalogs.ErrConflict, err,
					fmt.Sprintf("%s: commit ran out of time after %d conflicting attempts", what, retried))
			}
			return retried, err
		}
		v, err := c.Load(ctx)
		if err != nil {
			return retried, err
		}
		if done, err := c.Landed(ctx, v); done || err != nil {
			return retried, err
		}
		file, snap, err := c.Claimed(ctx, base, v, attempt == 0)
		if err != nil {
			return retried, err
		}
		if file != "" {
			return retried, Claimed(what, commitID, file, snap)
		}
		err = c.Attempt(ctx, v)
		if err == nil {
			return retried, nil
		}
		if !errors.Is(err, ErrLost) {
			if c.Recover(ctx, err) {
				return retried, nil
			}
			return retried, err
		}
		retried++
		if attempt >= r.Retries {
			return retried, catalogs.Wrap(catalogs.ErrConflict, err,
				fmt.Sprintf("%s: commit gave up after %d conflicting attempts", what, retried))
		}
		if err := catalogs.Sleep(ctx, catalogs.Backoff(attempt, r.MinWait, r.MaxWait)); err != nil {
			return retried, catalogs.Wrap(catalogs.ErrConflict, err,
				fmt.Sprintf("%s: commit ran out of time after %d conflicting attempts", what, retried))
		}
		base = v
	}
}

// Claimed is the refusal of a commit one of whose data files snapshot
// snap already adds (0 when the backend cannot tell which snapshot); what
// names the table, "table db.t".
func Claimed(what, commitID, file string, snap int64) error {
	in := "a snapshot of the table"
	if snap != 0 {
		in = fmt.Sprintf("snapshot %d", snap)
	}
	return catalogs.Errorf(catalogs.ErrFailedPrecondition,
		"%s: commit %s: data file %s is already in %s (committed by another commit): nothing committed", what, commitID, file, in)
}
