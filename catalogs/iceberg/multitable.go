package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// restProvider is the Provider of a REST catalog that offers the
// transactions/commit endpoint. It adds catalogs.MultiTableCommitter to
// what Provider does; the registry returns it for such catalogs, so that
// a catalog that cannot commit several tables atomically (the SQL catalog,
// a REST server without the endpoint) has no method that would only say
// so.
type restProvider struct{ *Provider }

var _ catalogs.MultiTableCommitter = restProvider{}

// capabilities returns p as the type that declares what its catalog can do.
func (p *Provider) capabilities() catalogs.Provider {
	if _, ok := p.transactional(); ok {
		return restProvider{p}
	}
	return p
}

// transactional returns the catalog's multi-table commit when it has one.
// iceberg-go checks the endpoint the server advertises before it looks at
// the commits, so a commit with no identifier tells, without a request,
// whether the server offers it.
func (p *Provider) transactional() (catalog.TransactionalCatalog, bool) {
	tc, ok := p.cat.(catalog.TransactionalCatalog)
	if !ok {
		return nil, false
	}
	err := tc.CommitTransaction(context.Background(), []table.TableCommit{{}})
	return tc, errors.Is(err, catalog.ErrMissingIdentifier)
}

// CommitTables commits every table's receipts in one CommitTransaction:
// each table's change asserts its table UUID and the snapshot its branch
// had when loaded, and adds one snapshot recording commitID (an append, or
// for ModeOverwrite a replacement of all data, with the new schema of a
// SchemaReplacer's receipts). A conflict on any table fails the whole
// request; it is retried as a whole after reloading every table, with the
// backoff and bounds of Commit. Tables with nothing to commit are left
// out of the request.
//
// Exactly once: when commitID has landed on every table it returns those
// snapshots (Duplicate where the landed snapshot did not add these
// receipts' files); when it has landed on some tables only, no atomic
// commit of these tables made it, and it fails with ErrFailedPrecondition
// naming them.
func (r restProvider) CommitTables(ctx context.Context, commitID string, tables []catalogs.TableCommit) ([]catalogs.CommitOutcome, error) {
	p := r.Provider
	if commitID == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: commit id is empty", p.name)
	}
	tc, ok := p.cat.(catalog.TransactionalCatalog)
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: no multi-table commit", p.name)
	}
	rms := make([][]receiptMeta, len(tables))
	seen := map[string]bool{}
	for i, t := range tables {
		if _, err := p.ident(t.Table); err != nil {
			return nil, err
		}
		if seen[t.Table.Key()] {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: appears twice in one commit", t.Table)
		}
		seen[t.Table.Key()] = true
		var err error
		if rms[i], err = parseReceipts(t.Table, t.Receipts); err != nil {
			return nil, err
		}
	}
	if len(tables) == 0 {
		return []catalogs.CommitOutcome{}, nil
	}
	mt := &multiRound{p: p, tc: tc, commitID: commitID, tables: tables, rms: rms}
	if _, err := lake.Run(ctx, p.cfg.commit, "tables "+tableNames(tables), commitID, mt); err != nil {
		return nil, err
	}
	return mt.out, nil
}

// multiRound is a multi-table commit's side of lake.Run.
type multiRound struct {
	p        *Provider
	tc       catalog.TransactionalCatalog
	commitID string
	tables   []catalogs.TableCommit
	rms      [][]receiptMeta
	retried  uint32
	out      []catalogs.CommitOutcome
}

func (m *multiRound) Load(ctx context.Context) ([]*table.Table, error) {
	return m.p.loadAll(ctx, m.tables)
}

// Landed: commitID on every table that has something to commit.
func (m *multiRound) Landed(ctx context.Context, tbls []*table.Table) (bool, error) {
	out, done, err := m.p.landed(ctx, m.commitID, m.tables, tbls, m.rms, m.retried)
	if done {
		m.out = out
	}
	return done, err
}

// Claimed is the file check: the first data file of an appending table
// that its current snapshot holds, or that a snapshot landed since base
// added (another replica's commit of the same receipts under another id
// won, or landed before), refuses the whole commit with lake.Claimed
// naming that table, the file and the snapshot. iceberg-go's own
// duplicate check, which would call it an existing file, is skipped by
// stage: this one read the same manifests. An overwrite replaces whatever
// the table holds, so its files are not checked (as in a group-commit
// round).
func (m *multiRound) Claimed(ctx context.Context, base, tbls []*table.Table, _ bool) (string, int64, error) {
	for i, t := range m.tables {
		if t.Mode == catalogs.ModeOverwrite {
			continue
		}
		want := map[string]bool{}
		for _, rm := range m.rms[i] {
			for _, f := range rm.Files {
				want[f.Path] = true
			}
		}
		var since *table.Table
		if base != nil {
			since = base[i]
		}
		in, err := claimed(ctx, since, tbls[i], want)
		if err != nil {
			return "", 0, mapErr(err, fmt.Sprintf("table %s: commit %s: read manifests", t.Table, m.commitID))
		}
		for _, rm := range m.rms[i] {
			for _, f := range rm.Files {
				if snap, ok := in[f.Path]; ok {
					return "", 0, lake.Claimed("table "+t.Table.String(), m.commitID, f.Path, snap)
				}
			}
		}
	}
	return "", 0, nil
}

// Attempt stages every table's change and commits them as one
// transaction; a lost one deletes the manifests it staged.
func (m *multiRound) Attempt(ctx context.Context, tbls []*table.Table) error {
	p := m.p
	staged, err := p.stageAll(ctx, m.commitID, m.tables, tbls, m.rms)
	if err != nil {
		return err
	}
	if len(staged) == 0 {
		m.out, err = p.committed(ctx, m.commitID, m.tables, m.retried)
		return err
	}
	commits := make([]table.TableCommit, len(staged))
	for i, s := range staged {
		commits[i] = s.commit
	}
	_, err = catalogs.Guard(ctx, p.remote, false, func(ctx context.Context) (struct{}, error) {
		var err error
		perr := protect(catalogs.ErrInvalidArgument, "commit transaction", func() error {
			err = m.tc.CommitTransaction(ctx, commits)
			return nil
		})
		return struct{}{}, errors.Join(err, perr)
	})
	if err == nil {
		p.log.DebugContext(ctx, "iceberg multi-table commit", "tables", len(staged), "commit_id", m.commitID, "retried", m.retried)
		m.out, err = p.committed(context.WithoutCancel(ctx), m.commitID, m.tables, m.retried)
		return err
	}
	if !isConflict(err) {
		return mapErr(err, fmt.Sprintf("tables %s: commit", tableNames(m.tables)))
	}
	for _, s := range staged {
		if id, list := addedSnapshot(s.commit.Updates); list != "" {
			p.dropOrphans(context.WithoutCancel(ctx), s.tbl, list, id)
		}
	}
	m.retried++
	return fmt.Errorf("%w: %w", lake.ErrLost, err)
}

// Recover: the catalog may have applied a commit whose reply was lost.
func (m *multiRound) Recover(ctx context.Context, _ error) bool {
	ctx = context.WithoutCancel(ctx)
	tbls, err := m.p.loadAll(ctx, m.tables)
	if err != nil {
		return false
	}
	out, done, err := m.p.landed(ctx, m.commitID, m.tables, tbls, m.rms, m.retried)
	if done && err == nil {
		m.out = out
		return true
	}
	return false
}

func tableNames(tables []catalogs.TableCommit) string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Table.String()
	}
	return strings.Join(names, ", ")
}

func (p *Provider) loadAll(ctx context.Context, tables []catalogs.TableCommit) ([]*table.Table, error) {
	out := make([]*table.Table, len(tables))
	for i, t := range tables {
		tbl, err := p.load(ctx, t.Table)
		if err != nil {
			return nil, err
		}
		out[i] = tbl
	}
	return out, nil
}

// landed looks for commitID on every table. done is true when it has
// landed on all of them that have something to commit; it is an
// ErrFailedPrecondition for it to have landed on some of them only.
func (p *Provider) landed(ctx context.Context, commitID string, tables []catalogs.TableCommit, tbls []*table.Table,
	rms [][]receiptMeta, retried uint32) ([]catalogs.CommitOutcome, bool, error) {
	out := make([]catalogs.CommitOutcome, len(tables))
	var have, missing []string
	for i, t := range tables {
		s := findSnapshot(tbls[i].Metadata(), commitID)
		if s == nil {
			if pending(tbls[i], rms[i], t.Mode) {
				missing = append(missing, t.Table.String())
			}
			out[i] = catalogs.CommitOutcome{CommittedAt: time.Now().UTC(), Retried: retried}
			continue
		}
		have = append(have, t.Table.String())
		out[i] = outcome(s, retried)
		holds, err := addsFiles(ctx, tbls[i], s, rms[i])
		if err != nil {
			return nil, false, mapErr(err, fmt.Sprintf("table %s: read commit %s", t.Table, commitID))
		}
		out[i].Duplicate = !holds
	}
	switch {
	case len(have) == 0:
		return nil, false, nil
	case len(missing) > 0:
		return nil, false, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"commit %s has landed on tables %s but not on %s: it is not an atomic commit of these tables",
			commitID, strings.Join(have, ", "), strings.Join(missing, ", "))
	}
	return out, true, nil
}

// pending reports whether committing rms to tbl would change it.
func pending(tbl *table.Table, rms []receiptMeta, mode catalogs.CommitMode) bool {
	for _, rm := range rms {
		if len(rm.Files) > 0 || (rm.schema != nil && !rm.schema.Equals(tbl.Schema())) {
			return true
		}
	}
	if mode != catalogs.ModeOverwrite {
		return false
	}
	s := tbl.CurrentSnapshot()
	if s == nil {
		return false
	}
	if s.Summary == nil {
		return true
	}
	n, err := strconv.ParseInt(s.Summary.Properties["total-data-files"], 10, 64)
	return err != nil || n > 0
}

// addsFiles reports whether snapshot s added every file of rms (false for
// receipts without files, whose commit cannot be recognised).
func addsFiles(ctx context.Context, tbl *table.Table, s *table.Snapshot, rms []receiptMeta) (bool, error) {
	want := map[string]bool{}
	for _, rm := range rms {
		for _, f := range rm.Files {
			want[f.Path] = true
		}
	}
	if len(want) == 0 {
		return true, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return false, err
	}
	var manifests []ice.ManifestFile
	err = protect(catalogs.ErrUnavailable, "read manifests", func() (err error) {
		manifests, err = s.Manifests(fsys)
		return err
	})
	if err != nil {
		return false, err
	}
	for _, m := range manifests {
		if m.SnapshotID() != s.SnapshotID {
			continue
		}
		var entries []ice.ManifestEntry
		err := protect(catalogs.ErrUnavailable, "read manifest", func() (err error) {
			entries, err = m.FetchEntries(fsys, true)
			return err
		})
		if err != nil {
			return false, err
		}
		for _, e := range entries {
			if e.Status() == ice.EntryStatusADDED {
				delete(want, e.DataFile().FilePath())
			}
		}
	}
	return len(want) == 0, nil
}

// stagedCommit is one table's change in a multi-table commit.
type stagedCommit struct {
	tbl    *table.Table
	commit table.TableCommit
}

// stageAll builds every table's change; tables with nothing to commit are
// left out. On failure it deletes the manifests it staged.
func (p *Provider) stageAll(ctx context.Context, commitID string, tables []catalogs.TableCommit, tbls []*table.Table,
	rms [][]receiptMeta) ([]stagedCommit, error) {
	var out []stagedCommit
	fail := func(err error) ([]stagedCommit, error) {
		for _, s := range out {
			if id, list := addedSnapshot(s.commit.Updates); list != "" {
				p.dropOrphans(context.WithoutCancel(ctx), s.tbl, list, id)
			}
		}
		return nil, err
	}
	for i, t := range tables {
		overwrite := t.Mode == catalogs.ModeOverwrite
		files, err := dataFiles(t.Table, tbls[i].Metadata(), rms[i])
		if err != nil {
			return fail(err)
		}
		change, err := schemaChangeFor(t.Table, tbls[i], rms[i], overwrite)
		if err != nil {
			return fail(err)
		}
		// The table's manifests are written under its encryption.
		enc, err := tableEncryption(t.Table, tbls[i])
		if err != nil {
			return fail(err)
		}
		sctx, err := p.encryptContext(ctx, enc)
		if err != nil {
			return fail(err)
		}
		tc, err := stage(sctx, tbls[i], commitID, files, overwrite, change)
		if err != nil {
			return fail(mapErr(err, fmt.Sprintf("table %s: commit", t.Table)))
		}
		if len(tc.Updates) > 0 {
			out = append(out, stagedCommit{tbl: tbls[i], commit: tc})
		}
	}
	return out, nil
}

// stage builds the change that adds files to tbl in one snapshot (an
// overwrite replaces every current file), after change's schema updates,
// without committing it. The change has no updates when there is nothing
// to commit.
func stage(ctx context.Context, tbl *table.Table, commitID string, files []ice.DataFile, overwrite bool, change *schemaChange) (table.TableCommit, error) {
	meta := tbl.Metadata()
	if change != nil {
		meta = change.meta
	}
	base := table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil)
	props := ice.Properties{CommitIDKey: commitID}
	var tc table.TableCommit
	err := protect(catalogs.ErrInvalidArgument, "stage commit", func() error {
		files, err := withRowLineage(meta, files)
		if err != nil {
			return err
		}
		txn := base.NewTransaction()
		if overwrite {
			old, err := currentFiles(ctx, tbl)
			if err != nil {
				return err
			}
			if len(old) > 0 || len(files) > 0 {
				if err := txn.ReplaceDataFilesWithDataFiles(ctx, old, files, props); err != nil {
					return err
				}
			}
		} else if len(files) > 0 {
			// multiRound.Claimed checked these files against tbl.
			if err := txn.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck()); err != nil {
				return err
			}
		}
		if tc, err = txn.TableCommit(); err != nil {
			return err
		}
		if change != nil {
			if len(tc.Updates) == 0 { // the schema alone
				tc.Requirements = []table.Requirement{table.AssertTableUUID(meta.TableUUID())}
			}
			tc.Requirements = append(append([]table.Requirement{}, change.reqs...), tc.Requirements...)
			tc.Updates = append(append([]table.Update{}, change.updates...), tc.Updates...)
		}
		return nil
	})
	return tc, err
}

// committed reports the snapshots commitID made (none for a table that
// had nothing to commit), reloading every table.
func (p *Provider) committed(ctx context.Context, commitID string, tables []catalogs.TableCommit, retried uint32) ([]catalogs.CommitOutcome, error) {
	out := make([]catalogs.CommitOutcome, len(tables))
	for i, t := range tables {
		tbl, err := p.load(ctx, t.Table)
		if err != nil {
			return nil, fmt.Errorf("table %s: reload after commit %s: %w", t.Table, commitID, err)
		}
		if s := findSnapshot(tbl.Metadata(), commitID); s != nil {
			out[i] = outcome(s, retried)
		} else {
			out[i] = catalogs.CommitOutcome{CommittedAt: time.Now().UTC(), Retried: retried}
		}
	}
	return out, nil
}

// dropOrphans deletes the manifest list of a commit attempt that lost and
// the manifests that attempt wrote (not those it inherited).
func (p *Provider) dropOrphans(ctx context.Context, tbl *table.Table, list string, snapshotID int64) {
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		return
	}
	f, err := fsys.Open(list)
	if err != nil {
		return
	}
	manifests, err := ice.ReadManifestList(f)
	_ = f.Close()
	if err != nil {
		return
	}
	for _, m := range manifests {
		if m.SnapshotID() == snapshotID {
			_ = removeFile(fsys, m.FilePath())
		}
	}
	_ = removeFile(fsys, list)
}
