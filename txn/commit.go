package txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// lookupTimeout bounds the commit-id lookup that resolves a commit whose
// outcome is unknown. It runs even when the caller's context has ended:
// the answer decides whether staged files may be deleted.
const lookupTimeout = 30 * time.Second

// outcomeUnknown marks a commit that may or may not have landed: the
// backend failed in a way that does not say, and the commit id could not
// be looked up. Nothing it staged may be deleted.
type outcomeUnknown struct {
	table catalogs.TableIdent
	err   error
}

func (e *outcomeUnknown) Error() string {
	return fmt.Sprintf("table %s: commit outcome unknown, staged files kept (retry with the same commit id): %v", e.table, e.err)
}

func (e *outcomeUnknown) Unwrap() []error { return []error{catalogs.ErrUnavailable, e.err} }

// isUnknown reports whether err leaves a commit's outcome open.
func isUnknown(err error) bool {
	var u *outcomeUnknown
	return errors.As(err, &u)
}

// commitStaged is the one commit policy of every unit of work (auto-commit
// ingest, INSERT, prepared INSERT, EndTransaction): commit s under
// commitID and, when the commit fails, find out from the commit id whether
// it landed anyway (a reply lost after the catalog applied it).
//
// It returns nil when the commit landed (now or earlier), an
// *outcomeUnknown when nobody can tell, and the backend's error when the
// commit certainly did not land: only then may the caller discard s's
// staged files. A Duplicate outcome (the commit id landed with other data)
// is returned as it is for the caller to discard its receipts.
func commitStaged(ctx context.Context, s *Staged, commitID string) (catalogs.CommitOutcome, error) {
	out, err := commitOnce(ctx, s, commitID)
	if err == nil {
		return out, nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		// The call was cut short: the backend may still have applied it.
		err = catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: commit interrupted", s.Table))
	}
	ic, ok := s.Provider.(catalogs.IdempotentCommitter)
	if !ok {
		if definite(err) {
			return catalogs.CommitOutcome{}, err
		}
		return catalogs.CommitOutcome{}, &outcomeUnknown{table: s.Table, err: err}
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	rec, landed, ferr := ic.FindCommit(lctx, s.Table, commitID)
	switch {
	case ferr != nil && s.create != nil && errors.Is(ferr, catalogs.ErrNotFound):
		// A staged create whose table does not exist did not land.
		return catalogs.CommitOutcome{}, err
	case ferr != nil:
		return catalogs.CommitOutcome{}, &outcomeUnknown{table: s.Table, err: errors.Join(err, ferr)}
	case landed:
		return rec.Outcome, nil
	default:
		return catalogs.CommitOutcome{}, err
	}
}

// commitOnce makes the one backend call that commits s.
func commitOnce(ctx context.Context, s *Staged, commitID string) (catalogs.CommitOutcome, error) {
	switch {
	case s.create != nil:
		return commitCreate(ctx, s, commitID)
	case s.Mode == Overwrite:
		ow, ok := s.Provider.(catalogs.Overwriter)
		if !ok {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: catalog cannot replace a table's data", s.Table)
		}
		return ow.CommitOverwrite(ctx, s.Table, commitID, s.Receipts)
	case len(s.Receipts) == 0:
		return catalogs.CommitOutcome{CommittedAt: time.Now().UTC()}, nil
	}
	if ic, ok := s.Provider.(catalogs.IdempotentCommitter); ok {
		return ic.CommitOnce(ctx, s.Table, commitID, s.Receipts)
	}
	return s.Provider.Commit(ctx, s.Table, s.Receipts)
}

// commitTables commits several tables of one catalog in one atomic
// catalog operation, resolving an unknown outcome by the commit id of the
// first table (atomic: all landed or none did).
func commitTables(ctx context.Context, mc catalogs.MultiTableCommitter, staged []*Staged, commitID string) ([]catalogs.CommitOutcome, error) {
	tcs := make([]catalogs.TableCommit, len(staged))
	for i, s := range staged {
		mode := catalogs.ModeAppend
		if s.Mode == Overwrite {
			mode = catalogs.ModeOverwrite
		}
		tcs[i] = catalogs.TableCommit{Table: s.Table, Mode: mode, Receipts: s.Receipts}
	}
	outs, err := mc.CommitTables(ctx, commitID, tcs)
	if err == nil {
		return outs, nil
	}
	ic, ok := staged[0].Provider.(catalogs.IdempotentCommitter)
	if !ok {
		if definite(err) {
			return nil, err
		}
		return nil, &outcomeUnknown{table: staged[0].Table, err: err}
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	outs = make([]catalogs.CommitOutcome, len(staged))
	for i, s := range staged {
		rec, landed, ferr := ic.FindCommit(lctx, s.Table, commitID)
		switch {
		case ferr != nil:
			return nil, &outcomeUnknown{table: s.Table, err: errors.Join(err, ferr)}
		case !landed && i == 0:
			return nil, err
		case !landed:
			// An atomic commit that landed on the first table but not on
			// this one: the catalog broke its promise. Keep everything.
			return nil, &outcomeUnknown{table: s.Table, err: err}
		}
		outs[i] = rec.Outcome
	}
	return outs, nil
}

// definite reports whether err says for certain that a commit did not
// apply: the backend refused it (bad receipts, a conflict it gave up on,
// a table in the wrong state). Unavailability, timeouts and unclassified
// errors leave the outcome open.
func definite(err error) bool {
	switch catalogs.Kind(err) {
	case catalogs.ErrInvalidArgument, catalogs.ErrConflict, catalogs.ErrFailedPrecondition, catalogs.ErrNotFound,
		catalogs.ErrPermissionDenied, catalogs.ErrUnauthenticated, catalogs.ErrAlreadyExists:
		return true
	}
	return false
}

// discard removes staged receipts when the backend can; it is the only
// way staged files are deleted, and is called only for receipts whose
// commit certainly did not land.
func discard(ctx context.Context, p catalogs.Provider, table catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	if len(receipts) == 0 {
		return nil
	}
	if d, ok := p.(catalogs.Discarder); ok {
		return d.Discard(ctx, table, receipts)
	}
	return nil
}
