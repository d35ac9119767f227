package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/internal/recovered"
)

// Group commit (the queue is the floor's, lake.Groups): one round at a
// time takes every pending append to a table and commits them as one
// snapshot, instead of N writers racing N compare-and-swaps (and leaving N
// snapshots, each in a metadata file listing all the snapshots before it).
// Between processes the compare-and-swap loop of runRound stays.

// Bounds of one round, beyond commit.group.max-members: the files of its
// manifest and the size of the commit ids it records in the snapshot
// summary (which every later metadata file repeats).
const (
	maxRoundFiles     = 10000
	maxCommitIDsBytes = 64 << 10
)

// member is one caller's commit waiting in, or running in, a round.
type member struct {
	lake.Queued // its caller's context, overwrite, and the queue's state
	id          string
	rms         []receiptMeta
	files       int // staged files, to bound a round

	// Decoded against the table each attempt loads.
	dfs      []ice.DataFile
	rows     uint64
	answered bool // finish was called (only the round touches it)

	out catalogs.CommitOutcome
	err error
}

func newMember(ctx context.Context, id string, rms []receiptMeta, overwrite bool) *member {
	m := &member{Queued: lake.NewQueued(ctx, overwrite), id: id, rms: rms}
	for _, rm := range rms {
		m.files += len(rm.Files)
	}
	return m
}

func (m *member) finish(out catalogs.CommitOutcome, err error) {
	m.out, m.err, m.answered = out, err, true
	m.Answered()
}

// submit commits m: alone when group commit is off, else through the
// table's queue (lake.Groups). A caller whose ctx ends while m is queued
// gets an error and m is never committed; once m's round has started the
// caller waits for the round's outcome, which may be a landed commit.
func (p *Provider) submit(ctx context.Context, t catalogs.TableIdent, m *member) (catalogs.CommitOutcome, error) {
	if !p.cfg.group.enabled {
		p.runRound(ctx, t, []*member{m})
		return m.out, m.err
	}
	p.groups.Submit(ctx, t.Key(), m, lake.Round[*member]{
		Run: func(ctx context.Context, ms []*member) { p.runRound(ctx, t, ms) },
		Budget: func() func(m *member) bool {
			// The round's manifest and the commit ids it records in the
			// snapshot summary (which every later metadata file repeats).
			n, files, idBytes := 0, 0, 0
			return func(m *member) bool {
				cost := len(m.id) + 24 // `"id":rows,` in the summary
				if n > 0 && (n >= p.cfg.group.maxMembers || files+m.files > maxRoundFiles || idBytes+cost > maxCommitIDsBytes) {
					return false
				}
				n, files, idBytes = n+1, files+m.files, idBytes+cost
				return true
			}
		},
		Drop: func(m *member, err error) {
			m.finish(catalogs.CommitOutcome{}, lake.Dropped("table "+t.String(), m.id, err))
		},
	})
	return m.out, m.err
}

// round is one commit of one or more members as one snapshot, retried on
// compare-and-swap conflicts.
type round struct {
	p         *Provider
	t         catalogs.TableIdent
	overwrite bool
	retried   uint32
	ms        []*member // every member, in queue order
	// live are the members the next attempt commits; followers share the
	// commit id of a live member (two writers with one key) and are
	// answered from its snapshot.
	live      []*member
	followers []*member
	// base is the table the last lost attempt was built on: the next
	// prepare checks the snapshots landed since for the members' files.
	base *table.Table
}

// runRound commits ms (appends, or one overwrite) as one snapshot and
// answers every member, through the floor's compare-and-swap loop
// (lake.Run): each attempt reloads the table, answers the members whose
// commit id has already landed from that snapshot, fails alone a member
// whose receipts do not fit the table or whose files the table already
// holds, and commits the rest; a lost compare-and-swap is retried with
// backoff, bounded by commit.retry.*.
func (p *Provider) runRound(ctx context.Context, t catalogs.TableIdent, ms []*member) {
	r := &round{p: p, t: t, overwrite: ms[0].Overwrite, ms: ms}
	// The round runs on the queue's goroutine: a panic answers the
	// members still waiting (their commits' outcome is then resolved by
	// commit id, as after any failed commit) instead of ending the process.
	var perr error
	defer func() {
		if perr != nil {
			r.fail(perr)
		}
	}()
	defer recovered.Catch(&perr, "commit of table "+t.String())
	if _, err := lake.Run(ctx, p.cfg.commit, "table "+t.String(), ms[0].id, r); err != nil {
		r.fail(mapErr(err, fmt.Sprintf("table %s: commit", t)))
	}
}

// Load reads the table for the next attempt.
func (r *round) Load(ctx context.Context) (*table.Table, error) { return r.p.load(ctx, r.t) }

// Landed answers the members that need no commit against tbl (prepare):
// the round is done when none is left.
func (r *round) Landed(ctx context.Context, tbl *table.Table) (bool, error) {
	r.prepare(ctx, tbl)
	return len(r.live) == 0, nil
}

// Claimed has nothing left to find: prepare fails alone each member one
// of whose files the current snapshot holds, or a snapshot landed since
// the lost attempt's base added (claimed), however it got there (another
// replica's commit that won the race this round lost, a repeated
// Commit), so that one member's refusal does not fail the others of its
// round.
func (r *round) Claimed(context.Context, *table.Table, *table.Table, bool) (string, int64, error) {
	return "", 0, nil
}

// Attempt commits the live members' files as one snapshot on tbl.
func (r *round) Attempt(ctx context.Context, tbl *table.Table) error {
	files := r.files()
	var change *schemaChange
	if r.overwrite {
		// A replace's receipts may carry a new schema (replace.go), built
		// anew on each attempt's table.
		var err error
		if change, err = schemaChangeFor(r.t, tbl, r.live[0].rms, true); err != nil {
			return err
		}
	}
	snap, err := r.p.attempt(ctx, tbl, r.summary(), files, r.overwrite, change)
	switch {
	case err != nil && isConflict(err):
		r.retried++
		r.base = tbl
		return fmt.Errorf("table %s: %w: %w", r.t, lake.ErrLost, err)
	case err != nil:
		return err
	case snap == nil: // an overwrite of an empty table with nothing
		r.land(catalogs.CommitOutcome{CommittedAt: time.Now().UTC(), Retried: r.retried}, files)
	default:
		r.p.log.DebugContext(ctx, "iceberg commit", "table", r.t.String(), "snapshot", snap.SnapshotID,
			"members", len(r.live), "files", len(files), "retried", r.retried)
		r.land(outcome(snap, r.retried), files)
	}
	return nil
}

// Recover: the catalog may have applied a commit whose reply was lost;
// the commit id tells.
func (r *round) Recover(ctx context.Context, _ error) bool {
	tbl, err := r.p.load(context.WithoutCancel(ctx), r.t)
	if err != nil {
		return false
	}
	s := findSnapshot(tbl.Metadata(), r.live[0].id)
	if s == nil {
		return false
	}
	r.land(outcome(s, r.retried), r.files())
	return true
}

// prepare answers the members that need no commit against tbl (their id
// landed, their receipts do not fit) and picks the live members and the
// followers of the next attempt.
func (r *round) prepare(ctx context.Context, tbl *table.Table) {
	meta := tbl.Metadata()
	added := map[int64]map[string]bool{} // landed snapshots' added files
	var cands []*member
	for _, m := range r.ms {
		if m.answered {
			continue
		}
		if s := findSnapshot(meta, m.id); s != nil {
			m.finish(r.fromLanded(ctx, tbl, s, m, added), nil)
			continue
		}
		dfs, err := dataFiles(r.t, meta, m.rms)
		if err != nil {
			m.finish(catalogs.CommitOutcome{}, err)
			continue
		}
		if !m.Overwrite {
			// A replace's receipts (a new schema) only land as an
			// overwrite (replace.go).
			if _, err := schemaChangeFor(r.t, tbl, m.rms, false); err != nil {
				m.finish(catalogs.CommitOutcome{}, err)
				continue
			}
		}
		if !m.Overwrite && len(dfs) == 0 {
			// Nothing to append: no snapshot, and no id recorded.
			m.finish(catalogs.CommitOutcome{CommittedAt: time.Now().UTC(), Retried: r.retried}, nil)
			continue
		}
		m.dfs, m.rows = dfs, 0
		for _, df := range dfs {
			m.rows += uint64(max(0, df.Count()))
		}
		cands = append(cands, m)
	}
	var inTable map[string]int64
	if !r.overwrite && len(cands) > 0 {
		var err error
		want := map[string]bool{}
		for _, m := range cands {
			for _, df := range m.dfs {
				want[df.FilePath()] = true
			}
		}
		if inTable, err = claimed(ctx, r.base, tbl, want); err != nil {
			for _, m := range cands {
				m.finish(catalogs.CommitOutcome{}, mapErr(err, fmt.Sprintf("table %s: commit: read manifests", r.t)))
			}
			cands = nil
		}
	}
	r.live, r.followers = nil, nil
	ids := map[string]bool{}
	claimed := map[string]bool{}
	for _, m := range cands {
		// Another commit id (another replica's commit of the same payload,
		// a plain Commit repeated) added the file: a second snapshot would
		// add its rows twice.
		if path := firstIn(m.dfs, inTable); path != "" {
			m.finish(catalogs.CommitOutcome{}, lake.Claimed("table "+r.t.String(), m.id, path, inTable[path]))
			continue
		}
		if ids[m.id] {
			r.followers = append(r.followers, m)
			continue
		}
		if path := firstIn(m.dfs, claimed); path != "" {
			m.finish(catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"table %s: commit %s: data file %s is in another commit of the same round", r.t, m.id, path))
			continue
		}
		ids[m.id] = true
		for _, df := range m.dfs {
			claimed[df.FilePath()] = true
		}
		r.live = append(r.live, m)
	}
}

func firstIn[V any](dfs []ice.DataFile, set map[string]V) string {
	for _, df := range dfs {
		if _, ok := set[df.FilePath()]; ok {
			return df.FilePath()
		}
	}
	return ""
}

// files is the union of the live members' files.
func (r *round) files() []ice.DataFile {
	var out []ice.DataFile
	for _, m := range r.live {
		out = append(out, m.dfs...)
	}
	return out
}

// summary is what the snapshot records: the commit id of a lone member
// under CommitIDKey (as every snapshot before group commit), or each
// member's id with its rows under CommitIDsKey.
// Either names this provider as the writer (WriterKey): its members are
// tracked in p.unsettled.
func (r *round) summary() ice.Properties {
	if len(r.live) == 1 {
		return ice.Properties{CommitIDKey: r.live[0].id, WriterKey: r.p.writer}
	}
	rows := make(map[string]uint64, len(r.live))
	for _, m := range r.live {
		rows[m.id] = m.rows
	}
	b, _ := json.Marshal(rows) // a map of strings to numbers always encodes
	return ice.Properties{CommitIDsKey: string(b), WriterKey: r.p.writer}
}

// land answers the live members with the outcome of their snapshot, and
// each follower too, as a duplicate unless its files are among files.
func (r *round) land(out catalogs.CommitOutcome, files []ice.DataFile) {
	for _, m := range r.live {
		m.finish(out, nil)
	}
	landed := map[string]bool{}
	for _, df := range files {
		landed[df.FilePath()] = true
	}
	for _, m := range r.followers {
		o := out
		o.Duplicate = duplicate(m.rms, landed)
		m.finish(o, nil)
	}
}

// fail answers every member still unanswered with err.
func (r *round) fail(err error) {
	for _, m := range r.ms {
		if !m.answered {
			m.finish(catalogs.CommitOutcome{}, err)
		}
	}
}

// fromLanded answers m from the snapshot that already recorded its commit
// id, reading the files that snapshot added (once per snapshot) to tell
// whether they are m's.
func (r *round) fromLanded(ctx context.Context, tbl *table.Table, s *table.Snapshot, m *member, cache map[int64]map[string]bool) catalogs.CommitOutcome {
	out := outcome(s, r.retried)
	if m.files == 0 {
		return out
	}
	files, ok := cache[s.SnapshotID]
	if !ok {
		var err error
		if files, err = addedFiles(ctx, tbl, s); err != nil {
			// Not knowing, say it is not a duplicate: the caller then keeps
			// the files rather than delete one the table may reference.
			r.p.log.WarnContext(ctx, "iceberg commit: cannot read the files of a landed snapshot",
				"table", r.t.String(), "snapshot", s.SnapshotID, "error", err)
		}
		cache[s.SnapshotID] = files
	}
	out.Duplicate = files != nil && duplicate(m.rms, files)
	return out
}

// duplicate reports whether none of the receipts' files is among landed:
// the commit id landed with other data, and these files are the caller's
// to discard. A partial overlap is not a duplicate, so that discarding
// never deletes a file the landed snapshot references.
func duplicate(rms []receiptMeta, landed map[string]bool) bool {
	any := false
	for _, rm := range rms {
		for _, f := range rm.Files {
			if landed[f.Path] {
				return false
			}
			any = true
		}
	}
	return any
}

// addedFiles lists the data files snapshot s added.
func addedFiles(ctx context.Context, tbl *table.Table, s *table.Snapshot) (map[string]bool, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	err = protect(catalogs.ErrUnavailable, "read manifests", func() error {
		manifests, err := s.Manifests(fsys)
		if err != nil {
			return err
		}
		for _, mf := range manifests {
			if mf.SnapshotID() != s.SnapshotID || mf.ManifestContent() != ice.ManifestContentData {
				continue
			}
			entries, err := mf.FetchEntries(fsys, true)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if e.Status() == ice.EntryStatusADDED && e.SnapshotID() == s.SnapshotID {
					out[e.DataFile().FilePath()] = true
				}
			}
		}
		return nil
	})
	return out, err
}

// claimed is the floor's file check (lake.Committer.Claimed) on Iceberg
// metadata: which of the files in want tbl already holds, each with the
// snapshot that added it. It looks in the current snapshot (referenced)
// and, after a lost race (base, the table the losing attempt was built
// on, is set), in what every snapshot landed since base added, so that
// a file another replica committed and an overwrite then replaced is not
// appended again either.
func claimed(ctx context.Context, base, tbl *table.Table, want map[string]bool) (map[string]int64, error) {
	in, err := referenced(ctx, tbl, want)
	if err != nil || base == nil || len(want) == 0 {
		return in, err
	}
	old := base.Metadata()
	for _, s := range tbl.Metadata().Snapshots() {
		if old.SnapshotByID(s.SnapshotID) != nil {
			continue
		}
		added, err := addedFiles(ctx, tbl, &s)
		if err != nil {
			return nil, err
		}
		for f := range added {
			if _, ok := in[f]; !ok && want[f] {
				if in == nil {
					in = map[string]int64{}
				}
				in[f] = s.SnapshotID
			}
		}
	}
	return in, nil
}

// referenced returns which of the files in want the table's current
// snapshot already holds, each with the snapshot that added it (a plain
// Commit repeated with the same receipts, or another process's commit of
// the same files that won the compare-and-swap this attempt lost): the
// floor's file check (lake.Committer.Claimed) on Iceberg metadata, one
// read of the current manifests, as iceberg-go's own duplicate check
// makes, which the attempts therefore skip. The current snapshot holds
// every file that landed since any base, so a landed file is found
// whichever replica's snapshot added it.
func referenced(ctx context.Context, tbl *table.Table, want map[string]bool) (map[string]int64, error) {
	cur := tbl.CurrentSnapshot()
	if cur == nil || len(want) == 0 {
		return nil, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	err = protect(catalogs.ErrUnavailable, "read manifests", func() error {
		manifests, err := cur.Manifests(fsys)
		if err != nil {
			return err
		}
		for _, mf := range manifests {
			if mf.ManifestContent() != ice.ManifestContentData {
				continue
			}
			entries, err := mf.FetchEntries(fsys, true)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if p := e.DataFile().FilePath(); want[p] {
					out[p] = e.SnapshotID()
				}
			}
		}
		return nil
	})
	return out, err
}
