package txn

import (
	"context"
	"errors"

	"github.com/flightgw/flightgw/catalogs"
)

// A distributed write ends a transaction in two steps on two sides: each
// worker gateway ends its transaction Prepared, handing its staged
// receipts out (as signed commit messages, codec/envelope), and one
// coordinator commits the receipts of every worker once per table under a
// commit id the client chose.
//
// A prepared transaction's receipts belong to whoever holds them: the
// reaper and Close no longer discard them, and nothing in this process
// remembers them. They stay staged until the coordinator commits them,
// an AbortMessages discards them, or the orphan reclaimer deletes the
// files once they are older than its reclaim.min_age and referenced by no
// snapshot.

// Prepare ends the open transaction id of owner without committing it
// and returns what it staged, table by table in first-write order. The
// transaction is then Prepared: a later COMMIT, ROLLBACK or Prepare of it
// fails with ErrFailedPrecondition saying so.
//
// handOut, when not nil, is called with each table before the transaction
// ends (the caller encodes its receipts there): an error from it leaves the
// transaction open, so that nothing is handed out half.
//
// A transaction that cannot be handed out whole is refused and stays
// open: one that an earlier COMMIT committed in part, one whose commit
// outcome is unknown (its receipts may already be in a snapshot), and one
// that replaces a table's data (a merged commit of several workers only
// appends).
func (m *Manager) Prepare(ctx context.Context, owner, id string, handOut func(Staged) error) ([]Staged, error) {
	t, err := m.Get(owner, id)
	if err != nil {
		return nil, err
	}
	staged, err := t.begin(Committing)
	if err != nil {
		return nil, err
	}
	if err := preparable(t, staged); err != nil {
		t.reopen()
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		t.reopen()
		return nil, err
	}
	if err := publishCreates(ctx, t, staged); err != nil {
		t.reopen()
		return nil, err
	}
	out := make([]Staged, len(staged))
	for i, s := range staged {
		out[i] = Staged{Table: s.Table, Provider: s.Provider, Mode: s.Mode,
			Receipts: append([]catalogs.WriteReceipt(nil), s.Receipts...)}
		if handOut == nil {
			continue
		}
		if err := handOut(out[i]); err != nil {
			t.reopen()
			return nil, err
		}
	}
	t.setState(Prepared)
	m.retire(t, Prepared)
	m.log.Info("transaction prepared", "txn", t.id, "tables", len(out))
	return out, nil
}

// preparable refuses a transaction that cannot be handed out whole.
func preparable(t *Txn, staged []*Staged) error {
	var errs []error
	for _, s := range staged {
		switch {
		case s.landed:
			errs = append(errs, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"transaction %s: table %s was already committed by an earlier COMMIT (retry COMMIT or ROLLBACK)", t.id, s.Table))
		case s.unknown:
			errs = append(errs, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"transaction %s: table %s has a commit of unknown outcome (retry COMMIT or ROLLBACK)", t.id, s.Table))
		case s.Mode == Overwrite:
			errs = append(errs, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"transaction %s: table %s is replaced, and a prepared commit can only append", t.id, s.Table))
		}
	}
	return errors.Join(errs...)
}

// CommitReceipts commits receipts that another process staged (the merged
// commit messages of several workers) to their tables under commitID,
// through the one commit policy of every unit of work: each table in one
// snapshot with the landed-commit check, several tables of one catalog
// that commits atomically (catalogs.MultiTableCommitter) in one catalog
// operation. Outcomes are in the order of tables.
//
// Repeated with the same commitID after a lost reply, it returns the
// snapshots that landed and appends nothing. Unlike a transaction's
// commit it never discards a receipt, not even when a commit certainly
// failed: the receipts are the caller's, to retry or to abort.
func (m *Manager) CommitReceipts(ctx context.Context, commitID string, tables []Staged) ([]catalogs.CommitOutcome, error) {
	if commitID == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "commit of prepared receipts: commit id is empty")
	}
	staged := make([]*Staged, len(tables))
	for i := range tables {
		s := tables[i]
		s.commitID = commitID
		staged[i] = &s
	}
	if mc, ok := oneMultiCommitter(staged); ok {
		outs, err := commitTables(ctx, mc, staged, commitID)
		m.observeAll(staged, outs, err)
		return outs, err
	}
	outs := make([]catalogs.CommitOutcome, len(staged))
	for i, s := range staged {
		out, err := commitStaged(ctx, s, commitID)
		m.obs.Committed(s.Table, out, err)
		if err != nil {
			return outs[:i], err
		}
		outs[i] = out
	}
	return outs, nil
}

// DiscardReceipts deletes the staged files of receipts another process
// handed out (an AbortMessages), through each table's backend
// (catalogs.Discarder). The caller has made sure that they were never
// committed.
func (m *Manager) DiscardReceipts(ctx context.Context, tables []Staged) error {
	var errs []error
	for _, s := range tables {
		if err := discard(ctx, s.Provider, s.Table, s.Receipts); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
