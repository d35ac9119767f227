package txn

import (
	"context"
	"fmt"

	"github.com/flightgw/flightgw/catalogs"
)

// Commit checks every payload of every table and commits each table's
// merged receipts once under commitID, through the one commit policy
// (Manager.CommitReceipts). A table on which commitID landed with these
// very files is answered from that commit and appends nothing; with other
// files the request is refused (FailedPrecondition naming the snapshot),
// and so are payloads already committed under another id. A commit that
// fails deletes nothing: the files are the caller's, to retry with the
// same commit id or to abort.
func (x *Messages) Commit(ctx context.Context, commitID string, tables []MessageTable) ([]CommittedTable, error) {
	if err := CheckCommitID(commitID); err != nil {
		return nil, err
	}
	staged, unlock, err := x.open(ctx, tables)
	if err != nil {
		return nil, err
	}
	defer unlock()
	landed, err := matchLanded(ctx, commitID, staged)
	if err != nil {
		return nil, err
	}
	if err := refuseReplay(ctx, commitID, staged, landed); err != nil {
		return nil, err
	}
	outs, err := x.m.CommitReceipts(ctx, messageCommitPrefix+commitID, staged)
	if err != nil {
		done := make([]string, len(outs))
		for i := range outs {
			done[i] = staged[i].Table.String()
		}
		return nil, fmt.Errorf("%s: committed: %s; the rest did not (retry with the same commit_id, or GetCommitStatus): %w",
			commitID, listOrNone(done), err)
	}
	res := make([]CommittedTable, 0, len(outs))
	for i, out := range outs {
		// What landed answers, not the request: another coordinator may
		// have landed the commit id first, with other payloads.
		rec, ok, err := landedAs(ctx, commitID, staged[i])
		if err != nil {
			return nil, err
		}
		if !ok { // nothing to commit: no snapshot, no commit id recorded
			rec = catalogs.CommitRecord{Outcome: out}
		}
		res = append(res, CommittedTable{Table: staged[i].Table, Record: rec, Payloads: len(tables[i].Payloads)})
	}
	x.m.log.Info("commit messages committed", "commit_id", commitID, "tables", len(staged))
	return res, nil
}

// Abort checks the payloads as Commit does and deletes the staged files
// they name, only when they were certainly never committed: a table on
// which commitID (when given) has landed is refused, and so is any file
// a snapshot references, whatever the commit id says (the payload may
// have been committed under another id).
func (x *Messages) Abort(ctx context.Context, commitID string, tables []MessageTable) ([]AbortedTable, error) {
	if commitID != "" {
		if err := CheckCommitID(commitID); err != nil {
			return nil, err
		}
	}
	staged, unlock, err := x.open(ctx, tables)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if commitID != "" {
		for _, s := range staged {
			rec, landed, err := findCommit(ctx, s.Provider, s.Table, commitID)
			if err != nil {
				return nil, err
			}
			if landed {
				return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "commit %s landed on table %s (snapshot %d): its files are live, nothing deleted",
					commitID, s.Table, rec.Outcome.SnapshotID)
			}
		}
	}
	for _, s := range staged {
		rc, ok := s.Provider.(catalogs.ReceiptChecker)
		if !ok {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q cannot tell whether the files of table %s are committed: nothing deleted",
				s.Table.Catalog, s.Table)
		}
		if err := rc.CheckUnreferenced(ctx, s.Table, s.Receipts); err != nil {
			return nil, fmt.Errorf("nothing deleted: %w", err)
		}
	}
	if err := x.m.DiscardReceipts(ctx, staged); err != nil {
		return nil, err
	}
	res := make([]AbortedTable, 0, len(staged))
	for _, s := range staged {
		res = append(res, AbortedTable{Table: s.Table, Receipts: len(s.Receipts)})
	}
	return res, nil
}

// Status looks a Commit's commit id up on a table: the commit as the
// table recorded it (its rows the rows that landed), or ok false.
func (x *Messages) Status(ctx context.Context, p catalogs.Provider, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	if err := CheckCommitID(commitID); err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	return findCommit(ctx, p, t, commitID)
}

// matchLanded looks commitID up on every table: a table on which it has
// landed with exactly these payloads' files is this commit's repeat (true
// in the result: answered from its snapshot, appending nothing); one on
// which it landed with other files refuses the whole request,
// FailedPrecondition naming the snapshot: a commit id names one set of
// files.
func matchLanded(ctx context.Context, commitID string, staged []Staged) ([]bool, error) {
	out := make([]bool, len(staged))
	for i, s := range staged {
		m, ok := s.Provider.(catalogs.CommitMatcher)
		if !ok {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q cannot tell which files a commit of table %s added: nothing committed",
				s.Table.Catalog, s.Table)
		}
		rec, landed, same, err := m.MatchCommit(ctx, s.Table, messageCommitPrefix+commitID, s.Receipts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", commitID, err)
		}
		if landed && !same {
			return nil, otherFiles(commitID, s.Table, rec)
		}
		out[i] = landed
	}
	return out, nil
}

// landedAs is the commit of commitID on s's table as recorded, after
// CommitReceipts answered: refused when it holds other files than s's (a
// coordinator racing with the same commit id and other payloads landed
// first; the backend then answered with its snapshot). ok is false when
// nothing was recorded (receipts without files).
func landedAs(ctx context.Context, commitID string, s Staged) (catalogs.CommitRecord, bool, error) {
	m := s.Provider.(catalogs.CommitMatcher) // matchLanded checked it
	rec, landed, same, err := m.MatchCommit(ctx, s.Table, messageCommitPrefix+commitID, s.Receipts)
	switch {
	case err != nil:
		return rec, false, fmt.Errorf("%s: table %s: committed, but what landed cannot be read (GetCommitStatus, or retry with the same commit_id): %w",
			commitID, s.Table, err)
	case landed && !same:
		return rec, false, otherFiles(commitID, s.Table, rec)
	}
	return rec, landed, nil
}

func otherFiles(commitID string, t catalogs.TableIdent, rec catalogs.CommitRecord) error {
	return catalogs.Errorf(catalogs.ErrFailedPrecondition,
		"commit_id %s landed on table %s in snapshot %d with other files than these payloads' (%d rows): nothing committed (a commit id names one set of files: commit other payloads under another commit_id)",
		commitID, t, rec.Outcome.SnapshotID, rec.RowCount)
}

// refuseReplay refuses payloads already committed under another commit
// id: a second commit of the same files would add every row twice (a
// backend does not always refuse a file it already has). A table on which
// commitID has landed with these files (landed) is this commit's repeat,
// answered with the first snapshot, and is not checked.
func refuseReplay(ctx context.Context, commitID string, staged []Staged, landed []bool) error {
	for i, s := range staged {
		rc, ok := s.Provider.(catalogs.ReceiptChecker)
		if !ok {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q cannot tell whether the files of table %s are already committed: nothing committed",
				s.Table.Catalog, s.Table)
		}
		if landed[i] {
			continue
		}
		if err := rc.CheckUnreferenced(ctx, s.Table, s.Receipts); err != nil {
			return fmt.Errorf("%s: payloads already committed (under another commit id): nothing committed: %w", commitID, err)
		}
	}
	return nil
}

// findCommit looks a commit-messages commit id up on a table.
func findCommit(ctx context.Context, p catalogs.Provider, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	ic, ok := p.(catalogs.IdempotentCommitter)
	if !ok {
		return catalogs.CommitRecord{}, false, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: catalog %q does not record commit ids", t, t.Catalog)
	}
	return ic.FindCommit(ctx, t, messageCommitPrefix+commitID)
}
