package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
	"github.com/flightgw/flightgw/internal/recovered"
)

// Group commit (the queue is the floor's, lake.Groups): one round at a
// time takes every pending append to a table and commits them as one log
// version, one txn per commit id, instead of N writers racing N
// put-if-absents of the next version (and leaving N versions, each a
// commit file every replay reads until the next checkpoint). Between
// processes the put-if-absent loop stays.

// maxRoundFiles bounds the adds of one round's commit file.
const maxRoundFiles = 10000

// member is one caller's commit waiting in, or running in, a round.
type member struct {
	lake.Queued // its caller's context, overwrite, and the queue's state
	id          string
	adds        []dcodec.AddFile
	schema      string // the schemaString the files were written for
	partition   []string
	rows        uint64
	answered    bool // finish was called (only the round touches it)

	out catalogs.CommitOutcome
	err error
}

func (m *member) finish(out catalogs.CommitOutcome, err error) {
	m.out, m.err, m.answered = out, err, true
	m.Answered()
}

// Close waits for the commit rounds under way (catalogs.Closer).
func (p *Provider) Close() error {
	p.groups.Wait()
	return nil
}

// commit commits the receipts under commitID: an append, or with
// overwrite a replace of every live file.
func (p *Provider) commit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt, overwrite bool) (catalogs.CommitOutcome, error) {
	if _, err := p.tableDir(t); err != nil {
		return catalogs.CommitOutcome{}, err
	}
	rs, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	m := &member{Queued: lake.NewQueued(ctx, overwrite), id: commitID}
	for _, r := range rs {
		if m.schema != "" && r.Schema != m.schema {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: the receipts were written for different schemas", t)
		}
		m.schema, m.partition = r.Schema, r.Partition
		for _, a := range r.Adds {
			if err := checkDataPath(t, a.Path); err != nil {
				return catalogs.CommitOutcome{}, err
			}
			if n, ok := numRecords(a.Stats); ok && n > 0 {
				m.rows += uint64(n)
			}
			m.adds = append(m.adds, a)
		}
	}
	return p.submit(ctx, t, m)
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
			n, files := 0, 0
			return func(m *member) bool {
				if n > 0 && (n >= p.cfg.group.maxMembers || files+len(m.adds) > maxRoundFiles) {
					return false
				}
				n, files = n+1, files+len(m.adds)
				return true
			}
		},
		Drop: func(m *member, err error) {
			m.finish(catalogs.CommitOutcome{}, lake.Dropped("table "+t.String(), m.id, err))
		},
	})
	return m.out, m.err
}

// round is one log version of one or more members, retried when another
// writer takes the version first.
type round struct {
	p         *Provider
	t         catalogs.TableIdent
	overwrite bool
	retried   uint32
	ms        []*member // every member, in queue order
	// live are the members the next attempt commits; followers share the
	// commit id of a live member (two writers with one key) and are
	// answered from its version.
	live, followers []*member
	// landedAt is the version the round wrote; checkpoint, whether a
	// checkpoint is due there.
	landedAt   int64
	checkpoint bool
}

// runRound commits ms (appends, or one overwrite) as one version and
// answers every member, through the floor's loop (lake.Run): each attempt
// replays the log, answers the members whose commit id has landed, fails
// alone a member whose files do not fit the table or are in it already,
// and commits the rest; a version taken by another writer is retried with
// backoff, bounded by commit.retry.*. A checkpoint due at the version
// the round wrote is written once its members are answered, before the
// queue's next round.
func (p *Provider) runRound(ctx context.Context, t catalogs.TableIdent, ms []*member) {
	r := &round{p: p, t: t, overwrite: ms[0].Overwrite, ms: ms}
	var perr error
	defer func() {
		if perr != nil {
			r.fail(perr)
		}
	}()
	// The round runs on the queue's goroutine: a panic answers the
	// members still waiting instead of ending the process.
	defer recovered.Catch(&perr, "commit of table "+t.String())
	if _, err := lake.Run[*tableState](ctx, p.cfg.commit, "table "+t.String(), ms[0].id, r); err != nil {
		r.fail(err)
		return
	}
	if r.checkpoint {
		p.checkpointAfter(ctx, t, r.landedAt)
	}
}

func (r *round) Load(ctx context.Context) (*tableState, error) { return r.p.load(ctx, r.t, -1) }

// Landed answers the members that need no commit against st (prepare):
// the round is done when none is left.
func (r *round) Landed(ctx context.Context, st *tableState) (bool, error) {
	if err := r.prepare(ctx, st); err != nil {
		return false, err
	}
	return len(r.live) == 0, nil
}

// Claimed has nothing left to find: prepare fails alone each member one
// of whose files the table holds already.
func (r *round) Claimed(context.Context, *tableState, *tableState, bool) (string, int64, error) {
	return "", 0, nil
}

// prepare answers the members that need no commit against st (their id
// landed, their files do not fit the table or are live in it already)
// and picks the live members and the followers of the next attempt.
func (r *round) prepare(ctx context.Context, st *tableState) error {
	live := map[string]bool{}
	for _, f := range st.snap.Files {
		live[f.Path] = true
	}
	r.live, r.followers = nil, nil
	ids := map[string]bool{}
	claimed := map[string]bool{}
	for _, m := range r.ms {
		if m.answered {
			continue
		}
		rec, files, ok, err := r.p.landedFiles(ctx, st, m.id)
		if err != nil {
			return err
		}
		if ok {
			out := rec.Outcome
			out.Retried = r.retried
			out.Duplicate = files != nil && duplicate(m.adds, files)
			m.finish(out, nil)
			continue
		}
		if err := r.fits(st, m); err != nil {
			m.finish(catalogs.CommitOutcome{}, err)
			continue
		}
		if ids[m.id] {
			r.followers = append(r.followers, m)
			continue
		}
		if p := firstIn(m.adds, live); p != "" {
			// Another commit id (a replica's commit of the same payload, a
			// plain Commit repeated) added the file: a second version would
			// add its rows twice.
			m.finish(catalogs.CommitOutcome{}, lake.Claimed("table "+r.t.String(), m.id, p, 0))
			continue
		}
		if p := firstIn(m.adds, claimed); p != "" {
			m.finish(catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"table %s: commit %s: data file %s is in another commit of the same round", r.t, m.id, p))
			continue
		}
		ids[m.id] = true
		for _, a := range m.adds {
			claimed[a.Path] = true
		}
		r.live = append(r.live, m)
	}
	return nil
}

// fits checks a member's files against the table as st replays it: the
// schema and partition columns they were written for are the table's.
func (r *round) fits(st *tableState, m *member) error {
	if m.schema != "" && st.snap.Metadata.SchemaString != m.schema {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the schema changed since the files of commit %s were written: nothing committed", r.t, m.id)
	}
	if len(m.adds) > 0 && !slices.Equal(st.snap.Metadata.PartitionColumns, m.partition) {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the partition columns changed since the files of commit %s were written (%v, now %v): nothing committed", r.t, m.id, m.partition, st.snap.Metadata.PartitionColumns)
	}
	return nil
}

func firstIn(adds []dcodec.AddFile, set map[string]bool) string {
	for _, a := range adds {
		if set[a.Path] {
			return a.Path
		}
	}
	return ""
}

// duplicate reports whether none of adds is among the files a landed
// version added (decoded paths): the commit id landed with other data,
// and these files are the caller's to discard. A partial overlap is not
// a duplicate, so that discarding never deletes a file the table
// references.
func duplicate(adds []dcodec.AddFile, landed map[string]bool) bool {
	for _, a := range adds {
		if rel, err := dcodec.DecodePath(a.Path); err != nil || landed[rel] {
			return false
		}
	}
	return len(adds) > 0
}

// Attempt writes the next log version: commitInfo first, one txn per
// live member, the removes of an overwrite, the adds. Blind appends
// never conflict with each other: a lost race only needs the next
// version, unless the winner changed the schema or the protocol under
// the files (prepare, checkWritable on the next replay).
func (r *round) Attempt(ctx context.Context, st *tableState) error {
	if err := checkWritable(st); err != nil {
		return err
	}
	v := st.snap.Version + 1
	now := r.p.now().UnixMilli()
	ict := st.snap.Metadata.InCommitTimestamps() && slices.Contains(st.snap.Protocol.WriterFeatures, dcodec.FeatureInCommitTimestamp)
	if ict {
		// The commit's time is its in-commit timestamp, one past the
		// previous commit's when the clock is behind it.
		now = dcodec.NextInCommitTimestamp(st.snap.CommitInfo, now)
	}
	mode := "Append"
	if r.overwrite {
		if appendOnly(st) {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: delta.appendOnly is true (feature %q): an overwrite would remove files", r.t, dcodec.FeatureAppendOnly)
		}
		mode = "Overwrite"
	}
	rows := make(map[string]uint64, len(r.live))
	for _, m := range r.live {
		rows[m.id] = m.rows
	}
	id := ""
	if len(r.live) == 1 {
		id = r.live[0].id
	}
	ci := commitInfo(now, "WRITE", map[string]any{"mode": mode}, !r.overwrite, id, rows)
	if ict {
		ci.SetInCommitTimestamp(now)
	}
	acts := []dcodec.Action{{CommitInfo: ci}}
	for _, m := range r.live {
		acts = append(acts, dcodec.Action{Txn: &dcodec.Txn{AppID: m.id, Version: v, LastUpdated: &now}})
	}
	if r.overwrite {
		for _, f := range st.snap.Files {
			size := f.Size
			ext := true
			acts = append(acts, dcodec.Action{Remove: &dcodec.RemoveFile{Path: f.Path, DeletionTimestamp: &now, DataChange: true,
				ExtendedFileMetadata: &ext, PartitionValues: f.PartitionValues, Size: &size, Stats: f.Stats,
				DeletionVector: f.DeletionVector, BaseRowID: f.BaseRowID, DefaultRowCommitVersion: f.DefaultRowCommitVersion}})
		}
	}
	adds, dm, err := r.rowIDs(st, v)
	if err != nil {
		return err
	}
	if dm != nil {
		acts = append(acts, dcodec.Action{DomainMetadata: dm})
	}
	for i := range adds {
		acts = append(acts, dcodec.Action{Add: &adds[i]})
	}
	b, err := dcodec.EncodeCommit(acts)
	if err != nil {
		return err
	}
	if beforeCommitWrite != nil {
		beforeCommitWrite(r.t, v)
	}
	switch err := r.p.fs.Create(ctx, st.dir+"/_delta_log/"+dcodec.CommitName(v), b); {
	case errors.Is(err, lake.ErrExists):
		r.retried++
		return fmt.Errorf("table %s: version %d: %w", r.t, v, lake.ErrLost)
	case err != nil:
		return lake.MapErr(err, fmt.Sprintf("table %s: write log version %d", r.t, v))
	}
	r.landedAt, r.checkpoint = v, checkpointDue(&st.snap.Metadata, v)
	r.land(catalogs.CommitOutcome{SnapshotID: v, CommittedAt: time.UnixMilli(now).UTC(), Retried: r.retried})
	return nil
}

// rowIDs returns the live members' adds for version v of st: on a table
// that assigns row ids (rowTracking supported, not suspended), copies
// with baseRowId past the table's high-water mark, file after file, and
// defaultRowCommitVersion v, and the delta.rowTracking domainMetadata
// with the new mark. Each attempt assigns them again from the snapshot
// it writes after, so a retry never reuses ids another writer took.
func (r *round) rowIDs(st *tableState, v int64) ([]dcodec.AddFile, *dcodec.DomainMetadata, error) {
	var adds []dcodec.AddFile
	for _, m := range r.live {
		adds = append(adds, m.adds...)
	}
	if len(adds) == 0 || !dcodec.AssignsRowIDs(&st.snap.Protocol, &st.snap.Metadata) {
		return adds, nil, nil
	}
	hwm, err := dcodec.RowIDHighWaterMark(st.snap)
	if err != nil {
		return nil, nil, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s", r.t))
	}
	for i := range adds {
		n, ok := numRecords(adds[i].Stats)
		if !ok || n < 0 {
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: data file %s has no numRecords in its stats, which row tracking (feature %q) needs", r.t, adds[i].Path, dcodec.FeatureRowTracking)
		}
		base, ver := hwm+1, v
		adds[i].BaseRowID, adds[i].DefaultRowCommitVersion = &base, &ver
		hwm += n
	}
	return adds, dcodec.RowTrackingDomainMetadata(hwm), nil
}

// beforeCommitWrite, set by tests only, runs between an attempt's replay
// and its put-if-absent of version v: another writer committing there
// makes the attempt lose the race.
var beforeCommitWrite func(t catalogs.TableIdent, v int64)

// Recover re-reads the log after a failed write: the commit landed when
// the first live member's txn is there (an S3 reply lost after the
// object was stored), and with it the whole round.
func (r *round) Recover(ctx context.Context, _ error) bool {
	ctx = context.WithoutCancel(ctx) // the write may have landed however the call ended
	st, err := r.Load(ctx)
	if err != nil || len(r.live) == 0 {
		return false
	}
	rec, ok, err := r.p.landed(ctx, st, r.live[0].id)
	if !ok || err != nil {
		return false
	}
	r.land(catalogs.CommitOutcome{SnapshotID: rec.Outcome.SnapshotID, CommittedAt: rec.Outcome.CommittedAt, Retried: r.retried})
	return true
}

// land answers the live members with the version's outcome, and each
// follower too, as a duplicate unless its files are among the version's.
func (r *round) land(out catalogs.CommitOutcome) {
	landed := map[string]bool{}
	for _, m := range r.live {
		m.finish(out, nil)
		for _, a := range m.adds {
			if rel, err := dcodec.DecodePath(a.Path); err == nil {
				landed[rel] = true
			}
		}
	}
	for _, m := range r.followers {
		o := out
		o.Duplicate = duplicate(m.adds, landed)
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
