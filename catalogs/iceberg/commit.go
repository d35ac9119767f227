package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
)

// CommitIDKey is the snapshot summary property that records the commit id
// of every snapshot this backend writes.
const CommitIDKey = "flightgw.commit-id"

// Commit appends the receipts' files in one snapshot under a fresh commit
// id. On a conflict it reloads the table and retries with exponential
// backoff and jitter, bounded by commit.retry.num-retries and
// commit.retry.total-timeout-ms; Retried counts the conflicts. On failure
// the staged files stay in place for the caller to retry or Discard.
func (p *Provider) Commit(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return p.commit(ctx, t, uuid.NewString(), false, receipts, false)
}

// CommitOnce commits like Commit and records commitID. When a snapshot
// with commitID has already landed it returns that snapshot and appends
// nothing.
func (p *Provider) CommitOnce(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: commit id is empty", t)
	}
	return p.commit(ctx, t, commitID, true, receipts, false)
}

// CommitOverwrite replaces every data file of the current snapshot with the
// receipts' files in one snapshot, with CommitOnce's rules when commitID is
// set.
func (p *Provider) CommitOverwrite(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	once := commitID != ""
	if !once {
		commitID = uuid.NewString()
	}
	return p.commit(ctx, t, commitID, once, receipts, true)
}

// FindCommit looks for the snapshot that recorded commitID.
func (p *Provider) FindCommit(ctx context.Context, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	if commitID == "" {
		return catalogs.CommitRecord{}, false, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: commit id is empty", t)
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	s := findSnapshot(tbl.Metadata(), commitID)
	if s == nil {
		return catalogs.CommitRecord{}, false, nil
	}
	return catalogs.CommitRecord{Outcome: outcome(s, 0), RowCount: addedRecords(s)}, true, nil
}

func findSnapshot(meta table.Metadata, commitID string) *table.Snapshot {
	snaps := meta.Snapshots()
	for i := len(snaps) - 1; i >= 0; i-- {
		s := &snaps[i]
		if s.Summary != nil && s.Summary.Properties[CommitIDKey] == commitID {
			return s
		}
	}
	return nil
}

func addedRecords(s *table.Snapshot) uint64 {
	if s.Summary == nil {
		return 0
	}
	n, _ := strconv.ParseUint(s.Summary.Properties["added-records"], 10, 64)
	return n
}

func outcome(s *table.Snapshot, retried uint32) catalogs.CommitOutcome {
	return catalogs.CommitOutcome{SnapshotID: s.SnapshotID, CommittedAt: time.UnixMilli(s.TimestampMs).UTC(), Retried: retried}
}

// commit is the compare-and-swap loop shared by every commit flavour.
func (p *Provider) commit(ctx context.Context, t catalogs.TableIdent, commitID string, once bool,
	receipts []catalogs.WriteReceipt, overwrite bool) (catalogs.CommitOutcome, error) {
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.commit.totalTimeout)
	defer cancel()
	var retried uint32
	for attempt := 0; ; attempt++ {
		tbl, err := p.load(cctx, t)
		if err != nil {
			return catalogs.CommitOutcome{}, err
		}
		if once {
			if s := findSnapshot(tbl.Metadata(), commitID); s != nil {
				return outcome(s, retried), nil
			}
		}
		files, err := dataFiles(t, tbl.Metadata(), rms)
		if err != nil {
			return catalogs.CommitOutcome{}, err
		}
		change, err := schemaChangeFor(t, tbl, rms, overwrite)
		if err != nil {
			return catalogs.CommitOutcome{}, err
		}
		snap, err := p.attempt(cctx, tbl, commitID, files, overwrite, change)
		if err == nil {
			if snap == nil {
				return catalogs.CommitOutcome{CommittedAt: time.Now().UTC(), Retried: retried}, nil
			}
			p.log.DebugContext(ctx, "iceberg commit", "table", t.String(), "snapshot", snap.SnapshotID,
				"files", len(files), "retried", retried)
			return outcome(snap, retried), nil
		}
		if !isConflict(err) {
			// The catalog may have applied a commit whose reply was lost:
			// the commit id tells.
			if tbl, lerr := p.load(context.WithoutCancel(ctx), t); lerr == nil {
				if s := findSnapshot(tbl.Metadata(), commitID); s != nil {
					return outcome(s, retried), nil
				}
			}
			return catalogs.CommitOutcome{}, mapErr(err, fmt.Sprintf("table %s: commit", t))
		}
		retried++
		if attempt >= p.cfg.commit.retries {
			return catalogs.CommitOutcome{}, catalogs.Wrap(catalogs.ErrConflict, err,
				fmt.Sprintf("table %s: commit gave up after %d conflicting attempts", t, retried))
		}
		if err := sleep(cctx, backoff(attempt, p.cfg.commit.minWait, p.cfg.commit.maxWait)); err != nil {
			return catalogs.CommitOutcome{}, catalogs.Wrap(catalogs.ErrConflict, err,
				fmt.Sprintf("table %s: commit ran out of time after %d conflicting attempts", t, retried))
		}
	}
}

// attempt makes one try at committing files on top of tbl. iceberg-go's
// own retry is bypassed (oneShot fails fast on a conflict) so that the
// loop above counts conflicts and re-checks the commit id each time. It
// returns the new snapshot, or nil when there was nothing to commit. A
// schema change (replace.go) is built on and committed with the snapshot.
func (p *Provider) attempt(ctx context.Context, tbl *table.Table, commitID string, files []ice.DataFile, overwrite bool, change *schemaChange) (*table.Snapshot, error) {
	cat := &oneShot{p: p, change: change}
	meta := tbl.Metadata()
	if change != nil {
		meta = change.meta
	}
	wrapped := table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, cat)
	props := ice.Properties{CommitIDKey: commitID}
	var committed *table.Table
	err := protect(catalogs.ErrInvalidArgument, "commit", func() error {
		txn := wrapped.NewTransaction()
		if overwrite {
			old, err := currentFiles(ctx, tbl)
			if err != nil {
				return err
			}
			if len(old) == 0 && len(files) == 0 {
				if change != nil { // the schema alone
					_, _, err = cat.CommitTable(ctx, tbl.Identifier(), []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID())}, nil)
				}
				return err
			}
			if err := txn.ReplaceDataFilesWithDataFiles(ctx, old, files, props); err != nil {
				return err
			}
		} else {
			if len(files) == 0 {
				return nil
			}
			if err := txn.AddDataFiles(ctx, files, props); err != nil {
				return err
			}
		}
		var err error
		committed, err = txn.Commit(ctx)
		return err
	})
	if err != nil {
		if cat.orphanList != "" {
			p.dropOrphans(context.WithoutCancel(ctx), tbl, cat.orphanList, cat.orphanSnapshot)
		}
		return nil, err
	}
	if committed == nil {
		return nil, nil
	}
	s := findSnapshot(committed.Metadata(), commitID)
	if s == nil {
		return nil, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: committed snapshot not found", tbl.Identifier())
	}
	return s, nil
}

// currentFiles lists the data files of the table's current snapshot.
func currentFiles(ctx context.Context, tbl *table.Table) ([]ice.DataFile, error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ice.DataFile, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, t.File)
	}
	return out, nil
}

// oneShot is the table.CatalogIO a commit attempt uses: it goes through
// the guard and reports a lost compare-and-swap as errConflict, which
// iceberg-go does not retry, remembering the manifest list the failed
// attempt wrote so that it can be deleted.
type oneShot struct {
	p *Provider
	// change, when set, is committed with the snapshot, before it.
	change         *schemaChange
	orphanList     string
	orphanSnapshot int64
}

func (o *oneShot) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	return o.p.cat.LoadTable(ctx, id)
}

func (o *oneShot) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	type res struct {
		meta table.Metadata
		loc  string
	}
	if o.change != nil {
		reqs = append(slices.Clone(o.change.reqs), reqs...)
		ups = append(slices.Clone(o.change.updates), ups...)
	}
	r, err := guard(ctx, o.p.remote, false, func(ctx context.Context) (res, error) {
		m, l, err := o.p.cat.CommitTable(ctx, id, reqs, ups)
		return res{m, l}, err
	})
	if err == nil {
		return r.meta, r.loc, nil
	}
	if isConflict(err) && !errors.Is(err, catalog.ErrNoSuchTable) {
		o.orphanList, o.orphanSnapshot = addedManifestList(ups)
		return nil, "", fmt.Errorf("%w: %v", errConflict, err)
	}
	return nil, "", err
}

// addedManifestList finds the manifest list of the snapshot an update set
// adds (the update types are internal to iceberg-go; their JSON is not).
func addedManifestList(ups []table.Update) (string, int64) {
	for _, u := range ups {
		b, err := json.Marshal(u)
		if err != nil {
			continue
		}
		var v struct {
			Action   string `json:"action"`
			Snapshot struct {
				ID           int64  `json:"snapshot-id"`
				ManifestList string `json:"manifest-list"`
			} `json:"snapshot"`
		}
		if json.Unmarshal(b, &v) == nil && v.Action == "add-snapshot" {
			return v.Snapshot.ManifestList, v.Snapshot.ID
		}
	}
	return "", 0
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
