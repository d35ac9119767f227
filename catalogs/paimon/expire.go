package paimon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

var _ catalogs.Maintainer = (*Provider)(nil)

// The snapshot retention options, spelt and defaulted as Paimon Java's
// CoreOptions has them.
const (
	optRetainedMin      = "snapshot.num-retained.min"
	optRetainedMax      = "snapshot.num-retained.max"
	optTimeRetained     = "snapshot.time-retained"
	optChangelogMin     = "changelog.num-retained.min"
	optChangelogMax     = "changelog.num-retained.max"
	optChangelogTime    = "changelog.time-retained"
	defaultRetainedMin  = 10
	defaultRetainedMax  = math.MaxInt32
	defaultTimeRetained = time.Hour
)

// MaintainTasks lists the tasks Maintain runs (catalogs.Maintainer).
// full_compact runs only when named. (The files a compaction replaces
// stay for the snapshots before it; a later expiry deletes them.)
func (p *Provider) MaintainTasks() []string {
	return []string{catalogs.TaskExpireSnapshots, catalogs.TaskCompact}
}

// Maintain runs req's tasks on table t (catalogs.Maintainer).
func (p *Provider) Maintain(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.MaintainReport, error) {
	supported := p.MaintainTasks()
	if len(req.Tasks) > 0 {
		supported = append(supported, catalogs.TaskFullCompact)
	}
	tasks, err := catalogs.MaintainTasksOf(t, req, supported)
	if err != nil {
		return catalogs.MaintainReport{}, err
	}
	var rep catalogs.MaintainReport
	for _, task := range tasks {
		var tr catalogs.TaskReport
		switch task {
		case catalogs.TaskExpireSnapshots:
			tr, err = p.expireSnapshots(ctx, t, req)
		case catalogs.TaskCompact, catalogs.TaskFullCompact:
			tr, err = p.compact(ctx, t, req, task == catalogs.TaskFullCompact)
		}
		if err != nil {
			return rep, err
		}
		rep.Tasks = append(rep.Tasks, tr)
	}
	return rep, nil
}

// retention is a table's snapshot retention.
type retention struct {
	min, max int64
	time     time.Duration
}

// retentionOf reads the table's retention options. A long-lived
// changelog (changelog.* retention beyond the snapshots', which Paimon
// Java keeps by moving the changelog of expired snapshots to changelog/)
// is refused: expiring without it would delete what its readers need.
func retentionOf(t catalogs.TableIdent, opts map[string]string) (retention, error) {
	r := retention{min: defaultRetainedMin, max: defaultRetainedMax, time: defaultTimeRetained}
	num := func(k string, def int64) (int64, error) {
		v, ok := opts[k]
		if !ok {
			return def, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 1 {
			return 0, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %s: %q is not a positive count", t, k, v)
		}
		return n, nil
	}
	dur := func(k string, def time.Duration) (time.Duration, error) {
		v, ok := opts[k]
		if !ok {
			return def, nil
		}
		d, err := parseDuration(v)
		if err != nil {
			return 0, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %s: %q is not a duration", t, k, v)
		}
		return d, nil
	}
	var err error
	if r.min, err = num(optRetainedMin, r.min); err != nil {
		return r, err
	}
	if r.max, err = num(optRetainedMax, r.max); err != nil {
		return r, err
	}
	if r.time, err = dur(optTimeRetained, r.time); err != nil {
		return r, err
	}
	if r.min > r.max {
		return r, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %s (%d) exceeds %s (%d)", t, optRetainedMin, r.min, optRetainedMax, r.max)
	}
	cmin, err := num(optChangelogMin, r.min)
	if err != nil {
		return r, err
	}
	cmax, err := num(optChangelogMax, r.max)
	if err != nil {
		return r, err
	}
	ctime, err := dur(optChangelogTime, r.time)
	if err != nil {
		return r, err
	}
	if cmin > r.min || cmax > r.max || ctime > r.time {
		return r, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: snapshot expiry refused: a changelog retained longer than snapshots (%s, %s, %s) is not handled by this gateway; expire with Paimon Java",
			t, optChangelogMin, optChangelogMax, optChangelogTime)
	}
	return r, nil
}

// expireSnapshots expires snapshots as Paimon Java's ExpireSnapshotsImpl
// does after each commit: beyond snapshot.num-retained.max the oldest go
// whatever their age; then, keeping at least snapshot.num-retained.min,
// every snapshot older than snapshot.time-retained up to the first one
// that is not; never one a consumer (consumer/) still reads, nor one
// younger than its floor (snapshotFloor; Paimon's expiry ends at the
// first snapshot it keeps, so a floor for some snapshots is one for all
// after them).
// snapshot.expire.limit, which bounds
// Java's post-commit runs, is not applied: this run is not on a commit's
// path. The snapshot files go first, oldest first, then the EARLIEST
// hint; then the manifest lists, manifests, data and changelog files
// that only expired snapshots reach: a file live in a retained snapshot
// (read again after the snapshots went), referenced by a tag or a
// long-lived changelog, or held by a live unit of work is kept. A crash
// between the two steps leaves unreferenced files, which the orphan
// reclaimer deletes.
func (p *Provider) expireSnapshots(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskExpireSnapshots, ExpiredSnapshots: []int64{}}
	st, err := p.load(ctx, t)
	if err != nil {
		return tr, err
	}
	if st.snap == nil {
		return tr, nil
	}
	if branches, err := p.fs.List(ctx, st.dir+"/branch"); err != nil || len(branches) > 0 {
		if err != nil {
			return tr, lake.MapErr(err, fmt.Sprintf("table %s: expire snapshots: list branches", t))
		}
		return tr, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: snapshot expiry refused: the table has branches (%s), whose snapshots this gateway does not read",
			t, strings.Join(branches, ", "))
	}
	ret, err := retentionOf(t, st.schema.Options)
	if err != nil {
		return tr, err
	}
	earliest, latest := p.earliestID(ctx, st.dir), st.snap.ID
	// A snapshot file expired is an id free again: a commit attempt that
	// loaded its table before that snapshot landed would then win the
	// put-if-absent of that id and land where no reader looks (its rows
	// lost). No attempt outlives the commit loop's total timeout, so a
	// snapshot younger than twice that (margin for replicas' clocks) is
	// never expired, whatever the caller's floor.
	end, err := p.expireEnd(ctx, st, ret, earliest, latest, p.snapshotFloor(req))
	if err != nil {
		return tr, err
	}
	tr.RetainedSnapshots = int(latest - max(end, earliest) + 1)
	if earliest == 0 || end <= earliest {
		return tr, nil
	}
	var expired []*snapshot
	for id := earliest; id < end; id++ {
		s, err := p.readSnapshot(ctx, t, st.dir, id)
		if lake.IsNotExist(err) {
			continue // expired meanwhile, by Paimon Java or another gateway
		}
		if err != nil {
			return tr, lake.MapErr(err, fmt.Sprintf("table %s: expire snapshots: snapshot-%d", t, id))
		}
		expired = append(expired, s)
		tr.ExpiredSnapshots = append(tr.ExpiredSnapshots, id)
	}
	keep, err := p.expiryKeep(ctx, st, end, latest, req.Held)
	if err != nil {
		return tr, err
	}
	reach, err := p.expiredReach(ctx, st, expired)
	if err != nil {
		return tr, err
	}
	if req.DryRun {
		p.countExpired(ctx, st, reach, keep, &tr, true)
		return tr, nil
	}
	for id := earliest; id < end; id++ {
		if err := p.fs.Remove(ctx, snapshotPath(st.dir, id)); err != nil && !lake.IsNotExist(err) {
			return tr, lake.MapErr(err, fmt.Sprintf("table %s: expire snapshots: delete snapshot-%d", t, id))
		}
	}
	tr.Committed = true
	if err := p.fs.Put(ctx, st.dir+"/snapshot/"+hintEarliest, []byte(strconv.FormatInt(end, 10))); err != nil {
		p.log.Warn("write EARLIEST hint", "table", t.String(), "err", err)
	}
	// Snapshots that landed since: what they reach is kept too.
	if now, err := p.latestSnapshot(ctx, t, st.dir); err != nil {
		return tr, err
	} else if now != nil && now.ID > latest {
		more, err := p.expiryKeep(ctx, st, latest+1, now.ID, nil)
		if err != nil {
			return tr, err
		}
		keep.merge(more)
	}
	return tr, p.countExpired(ctx, st, reach, keep, &tr, false)
}

// snapshotFloor is the age under which a snapshot is kept whatever the
// table's retention, snapshot by snapshot as Iceberg's expiry reads its
// floors: the caller's KeepNewerThan; ReplayWindow for a snapshot whose
// commit user is a commit id a client may send again (req.Replays: this
// backend's commit user is the commit id; a user it made itself,
// flightgw-<uuid>, is known to no client); CommitWindow and the commit
// loop's total timeout for every snapshot, since nothing in a Paimon
// snapshot tells this process's answered commits from a writer still
// looking its commit up (Iceberg's flightgw.writer); and always twice the
// commit loop's total timeout (expireSnapshots). Expiry ends at the first
// snapshot kept, so one kept keeps every later one.
func (p *Provider) snapshotFloor(req catalogs.MaintainRequest) func(*snapshot) time.Duration {
	total := p.cfg.commit.TotalTimeout
	always := max(req.KeepNewerThan, 2*total, req.CommitWindow+total)
	return func(s *snapshot) time.Duration {
		if !strings.HasPrefix(s.CommitUser, "flightgw-") && req.Replays(s.CommitUser) {
			return max(always, req.ReplayWindow)
		}
		return always
	}
}

// expireEnd is the first snapshot kept: every snapshot in [earliest, end)
// expires.
func (p *Provider) expireEnd(ctx context.Context, st *tableState, ret retention, earliest, latest int64, floor func(*snapshot) time.Duration) (int64, error) {
	if earliest == 0 {
		return 0, nil
	}
	lo := max(latest-ret.max+1, earliest)
	end := latest - ret.min + 1
	next, err := p.minConsumerSnapshot(ctx, st)
	if err != nil {
		return 0, err
	}
	end = min(end, next)
	now := p.now()
	older := now.Add(-ret.time).UnixMilli()
	for id := earliest; id < end; id++ {
		s, err := p.readSnapshot(ctx, st.ident, st.dir, id)
		if lake.IsNotExist(err) {
			continue
		}
		if err != nil {
			return 0, lake.MapErr(err, fmt.Sprintf("table %s: expire snapshots: snapshot-%d", st.ident, id))
		}
		if s.TimeMillis >= now.Add(-floor(s)).UnixMilli() || (id >= lo && s.TimeMillis >= older) {
			return id, nil
		}
	}
	return end, nil
}

// minConsumerSnapshot is the smallest next snapshot of the table's
// consumers (consumer/consumer-<id>, {"nextSnapshot": n}), which Paimon
// keeps for them; MaxInt64 without consumers.
func (p *Provider) minConsumerSnapshot(ctx context.Context, st *tableState) (int64, error) {
	names, err := p.fs.List(ctx, st.dir+"/consumer")
	if err != nil {
		return 0, lake.MapErr(err, fmt.Sprintf("table %s: expire snapshots: list consumers", st.ident))
	}
	next := int64(math.MaxInt64)
	for _, n := range names {
		if !strings.HasPrefix(n, "consumer-") {
			continue
		}
		b, err := p.fs.Read(ctx, st.dir+"/consumer/"+n)
		if lake.IsNotExist(err) {
			continue
		}
		if err != nil {
			return 0, lake.MapErr(err, fmt.Sprintf("table %s: expire snapshots: consumer %s", st.ident, n))
		}
		var c struct {
			NextSnapshot *int64 `json:"nextSnapshot"`
		}
		if err := json.Unmarshal(b, &c); err != nil || c.NextSnapshot == nil {
			return 0, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: snapshot expiry refused: consumer %s does not read as Paimon's Consumer JSON", st.ident, n)
		}
		next = min(next, *c.NextSnapshot)
	}
	return next, nil
}

// expiryRefs is what expiry keeps: manifest lists and manifests by name,
// data and changelog files by path relative to the table directory and
// by base name (as the reclaimer knows them).
type expiryRefs struct {
	manifests map[string]bool
	files     map[string]bool
	names     map[string]bool
}

func newExpiryRefs() *expiryRefs {
	return &expiryRefs{manifests: map[string]bool{}, files: map[string]bool{}, names: map[string]bool{}}
}

func (r *expiryRefs) addFile(rel string) {
	r.files[rel] = true
	r.names[path.Base(rel)] = true
}

func (r *expiryRefs) hasFile(rel string) bool { return r.files[rel] || r.names[path.Base(rel)] }

func (r *expiryRefs) merge(o *expiryRefs) {
	for k := range o.manifests {
		r.manifests[k] = true
	}
	for k := range o.files {
		r.addFile(k)
	}
	for k := range o.names {
		r.names[k] = true
	}
}

// entryFiles are the files of one manifest entry, relative to the table
// directory: the data file and its extra files; nil for a file stored at
// an external path (never deleted here).
func (st *tableState) entryFiles(e entry) []string {
	if e.file.ExternalPath != nil {
		return nil
	}
	dir := st.partitionDir(e) + "bucket-" + strconv.Itoa(int(e.bucket)) + "/"
	out := []string{dir + e.file.FileName}
	for _, x := range e.file.ExtraFiles {
		out = append(out, dir+x)
	}
	return out
}

// expiryKeep is what snapshots [from, to], the tags and the long-lived
// changelogs reach, and the files live units of work hold. Of a retained
// snapshot only its live data files count (an entry recording a file's
// deletion does not keep it: no reader of the snapshot opens it); its
// changelog files, and everything a tag or changelog file reaches, count
// whole.
func (p *Provider) expiryKeep(ctx context.Context, st *tableState, from, to int64,
	held func(context.Context, catalogs.TableIdent) []catalogs.WriteReceipt) (*expiryRefs, error) {
	keep := newExpiryRefs()
	h, err := heldFiles(ctx, st.ident, held)
	if err != nil {
		return nil, err
	}
	for f := range h {
		keep.addFile(f)
	}
	for id := from; id <= to; id++ {
		s, err := p.readSnapshot(ctx, st.ident, st.dir, id)
		if lake.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, lake.MapErr(err, fmt.Sprintf("table %s: expire snapshots: snapshot-%d", st.ident, id))
		}
		if err := p.keepLists(ctx, st, keep, s); err != nil {
			return nil, err
		}
		live, err := p.liveFiles(ctx, st.ident, st.dir, s)
		if err != nil {
			return nil, err
		}
		for _, e := range live {
			for _, f := range st.entryFiles(e) {
				keep.addFile(f)
			}
		}
		if s.ChangelogManifestList != nil && *s.ChangelogManifestList != "" {
			if err := p.keepWhole(ctx, st, keep, *s.ChangelogManifestList); err != nil {
				return nil, err
			}
		}
	}
	// Tags and long-lived changelogs: everything they reach.
	refs := newReclaimRefs(p, st)
	for _, d := range []string{"tag", "changelog"} {
		if err := refs.collectDir(ctx, d); err != nil {
			return nil, err
		}
	}
	for k := range refs.walk.lists {
		keep.manifests[k] = true
	}
	for k := range refs.walk.manifests {
		keep.manifests[k] = true
	}
	for k := range refs.walk.refs {
		keep.addFile(k)
	}
	return keep, nil
}

// keepLists keeps a snapshot's manifest lists and the manifests in them.
func (p *Provider) keepLists(ctx context.Context, st *tableState, keep *expiryRefs, s *snapshot) error {
	for _, l := range []string{s.BaseManifestList, s.DeltaManifestList} {
		if l == "" || keep.manifests[l] {
			continue
		}
		keep.manifests[l] = true
		ms, err := p.readManifestList(ctx, st.ident, st.dir, l)
		if err != nil {
			return err
		}
		for _, m := range ms {
			keep.manifests[m.FileName] = true
		}
	}
	return nil
}

// keepWhole keeps a manifest list, its manifests and every file their
// entries name.
func (p *Provider) keepWhole(ctx context.Context, st *tableState, keep *expiryRefs, list string) error {
	keep.manifests[list] = true
	ms, err := p.readManifestList(ctx, st.ident, st.dir, list)
	if err != nil {
		return err
	}
	for _, m := range ms {
		keep.manifests[m.FileName] = true
		es, err := p.readManifest(ctx, st.ident, st.dir, m.FileName)
		if err != nil {
			return err
		}
		for _, e := range es {
			for _, f := range st.entryFiles(e) {
				keep.addFile(f)
			}
		}
	}
	return nil
}

// expiredFile is a file an expired snapshot reaches, relative to the
// table directory.
type expiredFile struct {
	rel  string
	kind lake.FileKind
	size int64
}

// expiredReach lists, each once, what the expired snapshots reach: their
// base, delta and changelog manifest lists, the manifests in them and
// every file their entries name (added or deleted).
func (p *Provider) expiredReach(ctx context.Context, st *tableState, expired []*snapshot) ([]expiredFile, error) {
	seen := map[string]bool{}
	var out []expiredFile
	add := func(f expiredFile) {
		if !seen[f.rel] {
			seen[f.rel] = true
			out = append(out, f)
		}
	}
	for _, s := range expired {
		lists := []string{s.BaseManifestList, s.DeltaManifestList}
		if s.ChangelogManifestList != nil {
			lists = append(lists, *s.ChangelogManifestList)
		}
		for _, l := range lists {
			if l == "" || seen["manifest/"+l] {
				continue
			}
			add(expiredFile{rel: "manifest/" + l, kind: lake.KindManifest})
			ms, err := p.readManifestList(ctx, st.ident, st.dir, l)
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				if seen["manifest/"+m.FileName] {
					continue
				}
				add(expiredFile{rel: "manifest/" + m.FileName, kind: lake.KindManifest, size: m.FileSize})
				es, err := p.readManifest(ctx, st.ident, st.dir, m.FileName)
				if err != nil {
					return nil, err
				}
				for _, e := range es {
					for i, f := range st.entryFiles(e) {
						size := int64(0)
						if i == 0 {
							size = e.file.FileSize
						}
						add(expiredFile{rel: f, kind: lake.KindData, size: size})
					}
				}
			}
		}
	}
	return out, nil
}

// countExpired deletes (or, with dryRun, lists) the files of reach that
// keep does not hold, and counts them in tr. A file that cannot be
// deleted is left to the orphan reclaimer; the error names how many.
func (p *Provider) countExpired(ctx context.Context, st *tableState, reach []expiredFile, keep *expiryRefs, tr *catalogs.TaskReport, dryRun bool) error {
	ctx = context.WithoutCancel(ctx) // the snapshots are gone: finish even if the caller left
	var errs []error
	for _, f := range reach {
		if name, ok := strings.CutPrefix(f.rel, "manifest/"); ok && f.kind == lake.KindManifest {
			if keep.manifests[name] {
				continue
			}
		} else if keep.hasFile(f.rel) {
			continue
		}
		if dryRun {
			tr.Files = append(tr.Files, st.dir+"/"+f.rel)
		} else if err := p.fs.Remove(ctx, st.dir+"/"+f.rel); err != nil && !lake.IsNotExist(err) {
			errs = append(errs, err)
			continue
		}
		if f.kind == lake.KindData {
			tr.DataFiles++
		} else {
			tr.ManifestFiles++
		}
		tr.Bytes += f.size
	}
	slices.Sort(tr.Files)
	if len(errs) > 0 {
		return catalogs.Wrap(catalogs.ErrUnavailable, errors.Join(errs...),
			fmt.Sprintf("table %s: expire snapshots: %d files not deleted", st.ident, len(errs)))
	}
	return nil
}
