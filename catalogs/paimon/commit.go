package paimon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// Commit commits the receipts as an APPEND snapshot under a fresh commit
// user.
func (p *Provider) Commit(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return p.commit(ctx, t, "", receipts, false)
}

// CommitOnce commits the receipts as an APPEND snapshot whose commit user
// is commitID (Paimon's own exactly-once key, with the batch commit
// identifier). When a snapshot of that commit user exists, it returns
// that snapshot and appends nothing.
func (p *Provider) CommitOnce(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: empty commit id", t)
	}
	return p.commit(ctx, t, commitID, receipts, false)
}

// CommitOverwrite commits an OVERWRITE snapshot that deletes every data
// file of the current snapshot and adds the receipts'.
func (p *Provider) CommitOverwrite(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return p.commit(ctx, t, commitID, receipts, true)
}

// FindCommit looks for the snapshot of commit user commitID.
func (p *Provider) FindCommit(ctx context.Context, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	rec, files, err := p.landedCommit(ctx, t, commitID)
	return rec, files != nil, err
}

// MatchCommit looks for the snapshot of commit user commitID, and tells
// whether its delta added exactly the data files the receipts' messages
// add (a Paimon snapshot is one commit: its delta is that commit's files).
func (p *Provider) MatchCommit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitRecord, bool, bool, error) {
	msgs, _, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitRecord{}, false, false, err
	}
	rec, added, err := p.landedCommit(ctx, t, commitID)
	if err != nil || added == nil {
		return rec, false, false, err
	}
	want := map[string]bool{}
	for _, m := range msgs {
		for _, f := range m.Data.NewFiles {
			if !added[f.FileName] {
				return rec, true, false, nil
			}
			want[f.FileName] = true
		}
	}
	return rec, true, len(want) == len(added), nil
}

// landedCommit finds the snapshot of commit user commitID and the data
// files its delta added (a nil map when none landed).
func (p *Provider) landedCommit(ctx context.Context, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, map[string]bool, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return catalogs.CommitRecord{}, nil, err
	}
	s, err := p.findSnapshot(ctx, st, commitID)
	if err != nil || s == nil {
		return catalogs.CommitRecord{}, nil, err
	}
	added, _, err := p.deltaFiles(ctx, st, s)
	if err != nil {
		return catalogs.CommitRecord{}, nil, err
	}
	rec := catalogs.CommitRecord{Outcome: outcome(s, 0)}
	files := make(map[string]bool, len(added))
	for _, e := range added {
		rec.RowCount += uint64(e.file.RowCount)
		files[e.file.FileName] = true
	}
	return rec, files, nil
}

func outcome(s *snapshot, retried uint32) catalogs.CommitOutcome {
	return catalogs.CommitOutcome{SnapshotID: s.ID, CommittedAt: time.UnixMilli(s.TimeMillis).UTC(), Retried: retried}
}

// findSnapshot scans the snapshots from the newest for one committed by
// user with the batch commit identifier, as Paimon's
// FileStoreCommit.filterCommitted does; nil when none.
func (p *Provider) findSnapshot(ctx context.Context, st *tableState, user string) (*snapshot, error) {
	if user == "" || st.snap == nil {
		return nil, nil
	}
	earliest := p.earliestID(ctx, st.dir)
	for id := st.snap.ID; id >= earliest && id > 0; id-- {
		s := st.snap
		if id != st.snap.ID {
			var err error
			if s, err = p.readSnapshot(ctx, st.ident, st.dir, id); err != nil {
				if lake.IsNotExist(err) {
					break // expired meanwhile
				}
				return nil, lake.MapErr(err, fmt.Sprintf("table %s: snapshot-%d", st.ident, id))
			}
		}
		if s.CommitUser == user && s.CommitIdentifier == batchCommitIdentifier {
			return s, nil
		}
	}
	return nil, nil
}

// deltaFiles reads the entries a snapshot's delta added and deleted.
func (p *Provider) deltaFiles(ctx context.Context, st *tableState, s *snapshot) (added, deleted []entry, err error) {
	ms, err := p.readManifestList(ctx, st.ident, st.dir, s.DeltaManifestList)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range ms {
		es, err := p.readManifest(ctx, st.ident, st.dir, m.FileName)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range es {
			if e.kind == fileAdd {
				added = append(added, e)
			} else {
				deleted = append(deleted, e)
			}
		}
	}
	return added, deleted, nil
}

// commit runs the compare-and-swap loop of the floor (lake.Run) on
// Paimon's metadata: read the latest snapshot, write a manifest of the
// changes and the manifest lists, and create the next snapshot file with
// put-if-absent. When another committer created it first, the written
// manifests are deleted and the loop starts again from the new latest
// snapshot.
func (p *Provider) commit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt, overwrite bool) (catalogs.CommitOutcome, error) {
	msgs, metas, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	c := &committer{p: p, t: t, commitID: commitID, user: commitID, msgs: msgs, metas: metas, overwrite: overwrite}
	if c.user == "" {
		c.user = "flightgw-" + uuid.NewString()
	}
	retried, err := lake.Run(ctx, p.cfg.commit, "table "+t.String(), c.user, c)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	c.out.Retried = retried
	return c.out, nil
}

// committer is one commit's side of lake.Run: its messages, its commit
// user, and the outcome once it landed.
type committer struct {
	p         *Provider
	t         catalogs.TableIdent
	commitID  string // the caller's ("" for a plain Commit)
	user      string // the snapshot's commit user: commitID, or a fresh one
	msgs      []pcodec.CommitMessage
	metas     []receiptMeta
	overwrite bool
	out       catalogs.CommitOutcome
}

func (c *committer) Load(ctx context.Context) (*tableState, error) { return c.p.load(ctx, c.t) }

// Landed finds a snapshot of the commit user: the commit's, from an
// earlier attempt or an earlier call.
func (c *committer) Landed(ctx context.Context, st *tableState) (bool, error) {
	if c.commitID == "" {
		return false, nil
	}
	landed, err := c.p.findSnapshot(ctx, st, c.commitID)
	if err != nil || landed == nil {
		return false, err
	}
	c.out = outcome(landed, 0)
	c.out.Duplicate, err = c.p.otherData(ctx, st, landed, c.msgs)
	return true, err
}

// Claimed finds a data file of the commit that a snapshot landed
// meanwhile already adds: another process (a replica sharing the
// warehouse) committed the same payload under another commit id. After a
// lost race it reads the deltas of the snapshots after base; before the
// first attempt it asks the reference index when this process keeps one
// of the table (CheckUnreferenced ran, as CommitMessages' replay check
// does), so that a snapshot landed between that check and this load is
// seen too.
func (c *committer) Claimed(ctx context.Context, base, st *tableState, first bool) (string, int64, error) {
	if st.snap == nil {
		return "", 0, nil
	}
	if first {
		return c.indexed(ctx, st)
	}
	mine := map[string]bool{}
	for _, m := range c.msgs {
		for _, f := range m.Data.NewFiles {
			mine[f.FileName] = true
		}
	}
	from := int64(0)
	if base.snap != nil {
		from = base.snap.ID
	}
	for id := st.snap.ID; id > from && len(mine) > 0; id-- {
		s := st.snap
		if id != st.snap.ID {
			var err error
			if s, err = c.p.readSnapshot(ctx, st.ident, st.dir, id); err != nil {
				if lake.IsNotExist(err) {
					break // expired meanwhile: older ones are gone too
				}
				return "", 0, lake.MapErr(err, fmt.Sprintf("table %s: snapshot-%d", st.ident, id))
			}
		}
		added, _, err := c.p.deltaFiles(ctx, st, s)
		if err != nil {
			return "", 0, err
		}
		for _, e := range added {
			if mine[e.file.FileName] {
				return e.file.FileName, s.ID, nil
			}
		}
	}
	return "", 0, nil
}

// indexed is Claimed before the first attempt, when the provider keeps a
// reference index of the table.
func (c *committer) indexed(ctx context.Context, st *tableState) (string, int64, error) {
	if !c.p.refs.get().Holds(st.dir) {
		return "", 0, nil
	}
	var files []string
	for _, m := range c.metas {
		files = append(files, m.Files...)
	}
	f, err := c.p.indexed(ctx, st, files)
	return f, 0, err
}

// Attempt writes the manifests and creates the next snapshot; a lost
// attempt deletes the manifests it wrote.
func (c *committer) Attempt(ctx context.Context, st *tableState) error {
	if c.p.beforeAttempt != nil {
		c.p.beforeAttempt()
	}
	if err := commitFits(st, c.metas); err != nil {
		return err
	}
	s, written, err := c.p.attempt(ctx, st, c.user, c.msgs, c.overwrite)
	if err == nil {
		c.p.writeHints(ctx, st, s.ID)
		c.out = outcome(s, 0)
		return nil
	}
	for _, f := range written {
		_ = c.p.fs.Remove(context.WithoutCancel(ctx), st.dir+"/manifest/"+f)
	}
	if errors.Is(err, lake.ErrExists) {
		return fmt.Errorf("table %s: snapshot-%d: %w", c.t, nextID(st), lake.ErrLost)
	}
	return err
}

// Recover: a snapshot is created by put-if-absent, whose store settles the
// outcome before it answers (on S3 a retried PUT reads the object back),
// so an error means it did not land.
func (c *committer) Recover(context.Context, error) bool { return false }

func nextID(st *tableState) int64 {
	if st.snap == nil {
		return 1
	}
	return st.snap.ID + 1
}

// otherData reports whether the landed snapshot of a commit id holds
// other files than msgs (a second write reusing the commit id).
func (p *Provider) otherData(ctx context.Context, st *tableState, landed *snapshot, msgs []pcodec.CommitMessage) (bool, error) {
	added, _, err := p.deltaFiles(ctx, st, landed)
	if err != nil {
		return false, err
	}
	have := map[string]bool{}
	for _, e := range added {
		have[e.file.FileName] = true
	}
	for _, m := range msgs {
		for _, f := range m.Data.NewFiles {
			if !have[f.FileName] {
				return true, nil
			}
		}
	}
	return false, nil
}

// attempt writes the manifests (the previous snapshot's, merged, and this
// commit's), the manifest lists and snapshot N+1. It returns the names of
// the manifest files written (for cleanup) and lake.ErrExists when snapshot
// N+1 exists already.
func (p *Provider) attempt(ctx context.Context, st *tableState, user string, msgs []pcodec.CommitMessage, overwrite bool) (*snapshot, []string, error) {
	// The options of the table as this attempt reads it: another writer
	// may have altered them since the files were staged.
	if err := st.schema.checkWritable(st.ident); err != nil {
		return nil, nil, err
	}
	var es []entry
	var added, deletedRows int64
	if overwrite {
		live, err := p.liveFiles(ctx, st.ident, st.dir, st.snap)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range live {
			e.kind = fileDelete
			deletedRows += e.file.RowCount
			es = append(es, e)
		}
	}
	for _, m := range msgs {
		total := int32(-1)
		if m.TotalBuckets != nil {
			total = *m.TotalBuckets
		}
		for _, f := range m.Data.NewFiles {
			es = append(es, entry{kind: fileAdd, partition: m.Partition, bucket: m.Bucket, totalBuckets: total, file: f})
			added += f.RowCount
		}
	}
	kind := kindAppend
	if overwrite {
		kind = kindOverwrite
	}
	return p.commitEntries(ctx, st, user, kind, es, added-deletedRows, overwrite)
}

// commitEntries writes the manifests of es (this commit's changes, rows
// the record count they add, deletions subtracted), the manifest lists
// and snapshot N+1 of kind. It returns the names of the manifest files
// written (for cleanup) and lake.ErrExists when snapshot N+1 exists
// already.
func (p *Provider) commitEntries(ctx context.Context, st *tableState, user, kind string, es []entry, rows int64, overwrite bool) (*snapshot, []string, error) {
	mo, err := parseManifestOptions(st.schema.Options)
	if err != nil {
		return nil, nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: %v", st.ident, err)
	}
	w := &manifestWriter{p: p, st: st, prefix: uuid.NewString(), target: mo.targetSize}
	var base []manifestMeta
	prevTotal := int64(0)
	if st.snap != nil {
		prevTotal = st.snap.TotalRecordCount
		for _, l := range []string{st.snap.BaseManifestList, st.snap.DeltaManifestList} {
			ms, err := p.readManifestList(ctx, st.ident, st.dir, l)
			if err != nil {
				return nil, nil, err
			}
			base = append(base, ms...)
		}
	}
	// The base manifest list is the previous snapshot's manifests,
	// merged; the delta list holds this commit's changes only (what
	// FindCommit and Paimon's incremental readers read).
	base, err = p.mergeManifests(ctx, st, base, mo, w)
	if err != nil {
		return nil, w.written, err
	}
	delta, err := w.write(ctx, es)
	if err != nil {
		return nil, w.written, err
	}
	written := w.written
	baseName, deltaName := "manifest-list-"+w.prefix+"-0", "manifest-list-"+w.prefix+"-1"
	baseSize, err := p.writeList(ctx, st, baseName, base)
	if err != nil {
		return nil, written, err
	}
	written = append(written, baseName)
	deltaSize, err := p.writeList(ctx, st, deltaName, delta)
	if err != nil {
		return nil, written, err
	}
	written = append(written, deltaName)
	next := int64(1)
	if st.snap != nil {
		next = st.snap.ID + 1
	}
	s := &snapshot{Version: snapshotVersion, ID: next, SchemaID: st.schema.ID,
		BaseManifestList: baseName, BaseManifestListSize: &baseSize,
		DeltaManifestList: deltaName, DeltaManifestListSize: &deltaSize,
		CommitUser: user, CommitIdentifier: batchCommitIdentifier, CommitKind: kind,
		TimeMillis: p.now().UnixMilli(), TotalRecordCount: prevTotal + rows,
		DeltaRecordCount: rows}
	if err := p.inherit(ctx, st, s, overwrite); err != nil {
		return nil, written, err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, written, err
	}
	// createLocked: under Paimon's JDBC lock when the catalog has one (jdbc_lock.go).
	if err := p.createLocked(ctx, st.ident, snapshotPath(st.dir, next), b); err != nil {
		if errors.Is(err, lake.ErrExists) {
			return nil, written, lake.ErrExists
		}
		return nil, written, lake.MapErr(err, fmt.Sprintf("table %s: write snapshot-%d", st.ident, next))
	}
	return s, nil, nil
}

// writeHints moves the LATEST hint forward (and sets EARLIEST on the
// first snapshot). Hints are only hints: readers check the snapshot after
// the hinted one, so a failed or stale write loses nothing.
func (p *Provider) writeHints(ctx context.Context, st *tableState, id int64) {
	ctx = context.WithoutCancel(ctx)
	if err := p.fs.Put(ctx, st.dir+"/snapshot/"+hintLatest, []byte(strconv.FormatInt(id, 10))); err != nil {
		p.log.Warn("write LATEST hint", "table", st.ident.String(), "err", err)
	}
	if id == 1 {
		if err := p.fs.Put(ctx, st.dir+"/snapshot/"+hintEarliest, []byte("1")); err != nil {
			p.log.Warn("write EARLIEST hint", "table", st.ident.String(), "err", err)
		}
	}
}

// writeList writes a manifest list and returns its size.
func (p *Provider) writeList(ctx context.Context, st *tableState, name string, ms []manifestMeta) (int64, error) {
	b, err := encodeOCF(manifestMetaSchema, ms)
	if err != nil {
		return 0, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: encode manifest list", st.ident))
	}
	if err := p.fs.Create(ctx, st.dir+"/manifest/"+name, b); err != nil {
		return 0, lake.MapErr(err, fmt.Sprintf("table %s: write manifest list %s", st.ident, name))
	}
	return int64(len(b)), nil
}
