package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// maxExpireAttempts bounds the tries of an expiry that loses its
// compare-and-swap to writers: each try reloads the table, and after the
// last the expiry is abandoned (a writer never waits on it).
const maxExpireAttempts = 3

// MaintainTasks lists the tasks Maintain runs (catalogs.Maintainer).
func (p *Provider) MaintainTasks() []string {
	return []string{catalogs.TaskExpireSnapshots, catalogs.TaskRewriteDataFiles, catalogs.TaskRewriteManifests}
}

// Maintain runs req's tasks on table t (catalogs.Maintainer).
func (p *Provider) Maintain(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.MaintainReport, error) {
	tasks, err := catalogs.MaintainTasksOf(t, req, p.MaintainTasks())
	if err != nil {
		return catalogs.MaintainReport{}, err
	}
	if _, err := p.ident(t); err != nil {
		return catalogs.MaintainReport{}, err
	}
	var rep catalogs.MaintainReport
	for _, task := range tasks {
		var tr catalogs.TaskReport
		switch task {
		case catalogs.TaskExpireSnapshots:
			tr, err = p.expireSnapshots(ctx, t, req)
		case catalogs.TaskRewriteDataFiles:
			tr, err = p.rewriteDataFiles(ctx, t, req)
		case catalogs.TaskRewriteManifests:
			tr, err = p.rewriteManifests(ctx, t, req)
		}
		if err != nil {
			return rep, err
		}
		rep.Tasks = append(rep.Tasks, tr)
	}
	return rep, nil
}

// expireSnapshots removes the snapshots the table's retention no longer
// keeps, as Iceberg Java's ExpireSnapshots does (iceberg-go's
// Transaction.ExpireSnapshots decides which: history.expire.max-snapshot-
// age-ms, default 5 days, and history.expire.min-snapshots-to-keep,
// default 1, per branch, with the refs' own overrides), except that every
// ref is kept with the snapshot it points at (a branch or tag is never
// dropped by age here), and no snapshot a floor of req keeps goes
// (keeps). The removal is one metadata commit asserting every ref, so a
// writer's commit landing first makes it retry on the new metadata, at
// most maxExpireAttempts times, then give up. Once it landed, the
// manifest lists, manifests, data files and statistics files that only
// expired snapshots reach are deleted: a manifest the current metadata
// (read again after the commit) reaches, a data file live in one of its
// snapshots (an entry recording its deletion does not keep it), or a file
// a live unit of work holds, is kept.
func (p *Provider) expireSnapshots(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskExpireSnapshots, ExpiredSnapshots: []int64{}}
	for attempt := 1; ; attempt++ {
		tbl, err := p.load(ctx, t)
		if err != nil {
			return tr, err
		}
		plan, err := p.planExpiry(ctx, t, tbl, req)
		if err != nil {
			return tr, err
		}
		tr.RetainedSnapshots = len(tbl.Metadata().Snapshots()) - len(plan.expire)
		if len(plan.expire) == 0 {
			return tr, nil
		}
		fsys, err := fileIO(ctx, tbl)
		if err != nil {
			return tr, mapErr(err, fmt.Sprintf("table %s: expire snapshots: storage", t))
		}
		if req.DryRun {
			keep, err := p.retainedRefs(ctx, t, fsys, tbl, plan.expire, req.Held)
			if err != nil {
				return tr, err
			}
			tr.ExpiredSnapshots = ids(plan.expire)
			return tr, p.deleteExpired(ctx, t, tbl, fsys, plan.expire, keep, &tr, true)
		}
		err = p.commitExpiry(ctx, tbl, plan)
		if errors.Is(err, errConflict) {
			if attempt < maxExpireAttempts {
				continue
			}
			tr.Abandoned = fmt.Sprintf("lost the commit to writers %d times", attempt)
			return tr, nil
		}
		if err != nil {
			return tr, mapErr(err, fmt.Sprintf("table %s: expire snapshots: commit", t))
		}
		tr.Committed, tr.ExpiredSnapshots = true, ids(plan.expire)
		// The snapshots are gone: the deletions finish even if the caller
		// leaves. What the table reaches now is read again after the
		// commit: a commit landing meanwhile only adds what it references.
		ctx := context.WithoutCancel(ctx)
		now, err := p.load(ctx, t)
		if err != nil {
			return tr, err
		}
		keep := newRefs()
		keep.live = true
		if err := keep.addHeld(ctx, t, req.Held); err != nil {
			return tr, err
		}
		if err := keep.addTable(fsys, now); err != nil {
			return tr, mapErr(err, fmt.Sprintf("table %s: expire snapshots: read metadata", t))
		}
		return tr, p.deleteExpired(ctx, t, tbl, fsys, plan.expire, keep, &tr, false)
	}
}

// expiryPlan is what one expiry commits: the snapshots it removes and the
// requirements (every ref where it was, the table's UUID) under which.
type expiryPlan struct {
	expire []table.Snapshot
	reqs   []table.Requirement
}

// errPlanned stops the scratch commit planExpiry makes to learn what
// iceberg-go's ExpireSnapshots would commit.
var errPlanned = errors.New("expiry planned")

// planCatalog is the catalog of that scratch commit: it records the
// requirements and updates and commits nothing.
type planCatalog struct {
	p    *Provider
	reqs []table.Requirement
	ups  []table.Update
}

func (c *planCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	return c.p.cat.LoadTable(ctx, id)
}

func (c *planCatalog) CommitTable(_ context.Context, _ table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	c.reqs, c.ups = reqs, ups
	return nil, "", errPlanned
}

// planExpiry asks iceberg-go's ExpireSnapshots which snapshots the
// table's retention lets go, then keeps every ref's snapshot and every
// snapshot a floor of req keeps (keeps).
func (p *Provider) planExpiry(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, req catalogs.MaintainRequest) (expiryPlan, error) {
	cat := &planCatalog{p: p}
	scratch := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, cat)
	err := protect(catalogs.ErrInvalidArgument, "expire snapshots", func() error {
		txn := scratch.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithPostCommit(false)); err != nil {
			return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s", t))
		}
		_, err := txn.Commit(ctx)
		return err
	})
	if err != nil && !errors.Is(err, errPlanned) {
		return expiryPlan{}, mapErr(err, fmt.Sprintf("table %s: expire snapshots", t))
	}
	meta := tbl.Metadata()
	kept := map[int64]bool{}
	for _, ref := range meta.Refs() {
		kept[ref.SnapshotID] = true
	}
	if cur := meta.CurrentSnapshot(); cur != nil {
		kept[cur.SnapshotID] = true
	}
	now := time.Now()
	plan := expiryPlan{reqs: cat.reqs}
	for _, id := range removedSnapshots(cat.ups) {
		s := meta.SnapshotByID(id)
		if s == nil || kept[id] || p.keeps(s, req, now) {
			continue
		}
		plan.expire = append(plan.expire, *s)
	}
	return plan, nil
}

// keeps reports whether a floor of req keeps snapshot s, whatever the
// table's retention: it is younger than req.KeepNewerThan; or it records
// a commit id a client may send again (req.Replays) and is younger than
// req.ReplayWindow; or its writer may still look its commit id up: a
// commit of this provider under way or answered with an error within
// req.CommitWindow (unsettled), or, for a snapshot another writer made
// (another replica, this catalog opened by an earlier process, another
// engine), an age under req.CommitWindow plus the commit loop's bound,
// since nothing here tells when that writer's commit answered.
func (p *Provider) keeps(s *table.Snapshot, req catalogs.MaintainRequest, now time.Time) bool {
	age := now.Sub(time.UnixMilli(s.TimestampMs))
	if age < req.KeepNewerThan {
		return true
	}
	ids := commitIDs(s)
	if age < req.ReplayWindow {
		for _, id := range ids {
			if req.Replays(id) {
				return true
			}
		}
	}
	if s.Summary == nil || s.Summary.Properties[WriterKey] != p.writer {
		return age < req.CommitWindow+p.cfg.commit.TotalTimeout
	}
	for _, id := range ids {
		if p.unsettled.open(id, req.CommitWindow) {
			return true
		}
	}
	return false
}

// commitIDs lists the commit ids snapshot s records: CommitIDKey's, or
// the ids of a merged snapshot's CommitIDsKey (an undecodable value is one
// unknown id, which every floor treats as a client's).
func commitIDs(s *table.Snapshot) []string {
	if s.Summary == nil {
		return nil
	}
	if id, ok := s.Summary.Properties[CommitIDKey]; ok {
		return []string{id}
	}
	v, ok := s.Summary.Properties[CommitIDsKey]
	if !ok {
		return nil
	}
	var rows map[string]uint64
	if json.Unmarshal([]byte(v), &rows) != nil {
		return []string{v}
	}
	out := make([]string, 0, len(rows))
	for id := range rows {
		out = append(out, id)
	}
	return out
}

// removedSnapshots finds the ids an update set removes (the update types
// are internal to iceberg-go; their JSON is not). Ref removals are
// dropped: refs are kept.
func removedSnapshots(ups []table.Update) []int64 {
	var out []int64
	for _, u := range ups {
		b, err := json.Marshal(u)
		if err != nil {
			continue
		}
		var v struct {
			Action string  `json:"action"`
			IDs    []int64 `json:"snapshot-ids"`
		}
		if json.Unmarshal(b, &v) == nil && v.Action == table.UpdateRemoveSnapshots {
			out = append(out, v.IDs...)
		}
	}
	return out
}

// commitExpiry removes plan's snapshots in one commit through the guard;
// a lost compare-and-swap is errConflict.
func (p *Provider) commitExpiry(ctx context.Context, tbl *table.Table, plan expiryPlan) error {
	cat := &oneShot{p: p}
	reqs := plan.reqs
	if len(reqs) == 0 { // ExpireSnapshots always asserts the refs; never commit blind
		reqs = []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID())}
		for name, ref := range tbl.Metadata().Refs() {
			reqs = append(reqs, table.AssertRefSnapshotID(name, &ref.SnapshotID))
		}
	}
	ups := []table.Update{table.NewRemoveSnapshotsUpdate(ids(plan.expire), false)}
	return protect(catalogs.ErrUnavailable, "expire snapshots", func() error {
		_, _, err := cat.CommitTable(ctx, tbl.Identifier(), reqs, ups)
		return err
	})
}

// retainedRefs is what a dry run keeps: the files the snapshots that stay
// reach, the metadata files and those live units of work hold.
func (p *Provider) retainedRefs(ctx context.Context, t catalogs.TableIdent, fsys iceio.IO, tbl *table.Table, expire []table.Snapshot,
	held func(context.Context, catalogs.TableIdent) []catalogs.WriteReceipt) (*refs, error) {
	keep := newRefs()
	keep.live = true
	if err := keep.addHeld(ctx, t, held); err != nil {
		return nil, err
	}
	gone := map[int64]bool{}
	for _, s := range expire {
		gone[s.SnapshotID] = true
	}
	keep.add(tbl.MetadataLocation())
	for e := range tbl.Metadata().PreviousFiles() {
		keep.add(e.MetadataFile)
	}
	for s := range tbl.Metadata().Statistics() {
		if !gone[s.SnapshotID] {
			keep.add(s.StatisticsPath)
		}
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if gone[s.SnapshotID] {
			continue
		}
		if err := keep.addSnapshot(fsys, s); err != nil {
			return nil, mapErr(err, fmt.Sprintf("table %s: expire snapshots: read metadata", t))
		}
	}
	return keep, nil
}

// expiredFile is a file an expired snapshot reaches.
type expiredFile struct {
	path string
	kind lake.FileKind
	size int64
}

// deleteExpired deletes (or, with dryRun, lists) the files the expired
// snapshots of tbl reach that keep does not, inside the table's location
// only, and counts them in tr.
func (p *Provider) deleteExpired(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, fsys iceio.IO, expire []table.Snapshot,
	keep *refs, tr *catalogs.TaskReport, dryRun bool) error {
	root, ok := canonPath(tbl.Location())
	if !ok {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: expire snapshots: location %q is not a path or URI", t, tbl.Location())
	}
	files, err := expiredReach(fsys, tbl, expire)
	if err != nil {
		return mapErr(err, fmt.Sprintf("table %s: expire snapshots: read expired snapshots", t))
	}
	var errs []error
	for _, f := range files {
		if keep.has(f.path) {
			continue
		}
		if c, ok := canonPath(f.path); !ok || !within(c, root) || keep.held(f.path) {
			tr.Kept++
			continue
		}
		if dryRun {
			tr.Files = append(tr.Files, f.path)
		} else if err := p.deleteFile(ctx, fsys, f.path); err != nil {
			errs = append(errs, err)
			continue
		}
		switch f.kind {
		case lake.KindData:
			tr.DataFiles++
		case lake.KindManifest:
			tr.ManifestFiles++
		default:
			tr.MetadataFiles++
		}
		tr.Bytes += f.size
	}
	if len(errs) > 0 {
		// The snapshots are gone; what could not be deleted is left to
		// the orphan reclaimer.
		return catalogs.Wrap(catalogs.ErrUnavailable, errors.Join(errs...),
			fmt.Sprintf("table %s: expire snapshots: %d files not deleted", t, len(errs)))
	}
	return nil
}

// deleteFile deletes one file through the storage breaker.
func (p *Provider) deleteFile(ctx context.Context, fsys iceio.IO, loc string) error {
	_, err := catalogs.Guard(ctx, p.storage, true, func(context.Context) (struct{}, error) {
		return struct{}{}, removeFile(fsys, loc)
	})
	return err
}

// expiredReach lists what the expired snapshots reach, each file once:
// manifest lists, manifests, the data and delete files of their entries
// (deleted entries included) and their statistics files.
func expiredReach(fsys iceio.IO, tbl *table.Table, expire []table.Snapshot) ([]expiredFile, error) {
	seen := map[string]bool{}
	var out []expiredFile
	add := func(f expiredFile) {
		if f.path != "" && !seen[f.path] {
			seen[f.path] = true
			out = append(out, f)
		}
	}
	gone := map[int64]bool{}
	for _, s := range expire {
		gone[s.SnapshotID] = true
	}
	for s := range tbl.Metadata().Statistics() {
		if gone[s.SnapshotID] {
			add(expiredFile{path: s.StatisticsPath, kind: lake.KindMetadata, size: s.FileSizeInBytes})
		}
	}
	read := map[string]bool{}
	err := protect(catalogs.ErrUnavailable, "read expired snapshots", func() error {
		for _, s := range expire {
			add(expiredFile{path: s.ManifestList, kind: lake.KindManifest})
			mfs, err := s.Manifests(fsys)
			if err != nil {
				return fmt.Errorf("snapshot %d: manifest list %s: %w", s.SnapshotID, s.ManifestList, err)
			}
			for _, mf := range mfs {
				add(expiredFile{path: mf.FilePath(), kind: lake.KindManifest, size: mf.Length()})
				if read[mf.FilePath()] {
					continue
				}
				read[mf.FilePath()] = true
				entries, err := mf.FetchEntries(fsys, false)
				if err != nil {
					return fmt.Errorf("snapshot %d: manifest %s: %w", s.SnapshotID, mf.FilePath(), err)
				}
				for _, e := range entries {
					if df := e.DataFile(); df != nil {
						add(expiredFile{path: df.FilePath(), kind: lake.KindData, size: df.FileSizeBytes()})
					}
				}
			}
		}
		return nil
	})
	return out, err
}

// ids lists the snapshots' ids, in order.
func ids(snaps []table.Snapshot) []int64 {
	out := make([]int64, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, s.SnapshotID)
	}
	slices.Sort(out)
	return out
}
