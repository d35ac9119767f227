package paimon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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
	st, err := p.load(ctx, t)
	if err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	s, err := p.findSnapshot(ctx, st, commitID)
	if err != nil || s == nil {
		return catalogs.CommitRecord{}, false, err
	}
	added, _, err := p.deltaFiles(ctx, st, s)
	if err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	var rows uint64
	for _, e := range added {
		rows += uint64(e.file.RowCount)
	}
	return catalogs.CommitRecord{Outcome: outcome(s, 0), RowCount: rows}, true, nil
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

// commit is the compare-and-swap loop: read the latest snapshot, write a
// manifest of the changes and the manifest lists, and create the next
// snapshot file with put-if-absent. When another committer created it
// first, the written manifests are deleted and the loop starts again
// from the new latest snapshot.
func (p *Provider) commit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt, overwrite bool) (catalogs.CommitOutcome, error) {
	msgs, metas, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	user := commitID
	if user == "" {
		user = "flightgw-" + uuid.NewString()
	}
	var retried uint32
	wait := p.cfg.minWait
	// base is the snapshot the last attempt was built on (-1 before the
	// first): the snapshots after it landed while that attempt lost.
	base := int64(-1)
	for {
		if err := ctx.Err(); err != nil {
			return catalogs.CommitOutcome{}, err
		}
		st, err := p.load(ctx, t)
		if err != nil {
			return catalogs.CommitOutcome{}, err
		}
		if commitID != "" {
			landed, err := p.findSnapshot(ctx, st, commitID)
			if err != nil {
				return catalogs.CommitOutcome{}, err
			}
			if landed != nil {
				out := outcome(landed, retried)
				out.Duplicate, err = p.otherData(ctx, st, landed, msgs)
				return out, err
			}
		}
		if err := p.refuseClaimed(ctx, st, user, base, msgs, metas); err != nil {
			return catalogs.CommitOutcome{}, err
		}
		if p.beforeAttempt != nil {
			p.beforeAttempt()
		}
		s, written, err := p.attempt(ctx, st, user, msgs, overwrite)
		if err == nil {
			p.writeHints(ctx, st, s.ID)
			return outcome(s, retried), nil
		}
		for _, f := range written {
			_ = p.fs.Remove(context.WithoutCancel(ctx), st.dir+"/manifest/"+f)
		}
		if !errors.Is(err, lake.ErrExists) {
			return catalogs.CommitOutcome{}, err
		}
		base = 0
		if st.snap != nil {
			base = st.snap.ID
		}
		if int(retried) >= p.cfg.retries {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrConflict, "table %s: commit lost %d compare-and-swap races in a row", t, retried+1)
		}
		retried++
		d := wait/2 + rand.N(wait/2+1)
		wait = min(wait*2, p.cfg.maxWait)
		select {
		case <-ctx.Done():
			return catalogs.CommitOutcome{}, ctx.Err()
		case <-time.After(d):
		}
	}
}

// refuseClaimed refuses a commit one of whose data files a snapshot that
// landed meanwhile already adds: another process (a replica sharing the
// warehouse) committed the same payload under another commit id, and a
// second snapshot would add every row twice. After a lost race (base >=
// 0) it reads the deltas of the snapshots after base; before the first
// attempt it asks the reference index when this process keeps one of the
// table (CheckUnreferenced ran, as CommitMessages' replay check does), so
// that a snapshot landed between that check and this load is seen too.
func (p *Provider) refuseClaimed(ctx context.Context, st *tableState, user string, base int64, msgs []pcodec.CommitMessage, metas []receiptMeta) error {
	if st.snap == nil {
		return nil
	}
	mine := map[string]bool{}
	for _, m := range msgs {
		for _, f := range m.Data.NewFiles {
			mine[f.FileName] = true
		}
	}
	if len(mine) == 0 {
		return nil
	}
	if base < 0 {
		return p.refuseIndexed(ctx, st, user, metas)
	}
	for id := st.snap.ID; id > base; id-- {
		s := st.snap
		if id != st.snap.ID {
			var err error
			if s, err = p.readSnapshot(ctx, st.ident, st.dir, id); err != nil {
				if lake.IsNotExist(err) {
					break // expired meanwhile: older ones are gone too
				}
				return lake.MapErr(err, fmt.Sprintf("table %s: snapshot-%d", st.ident, id))
			}
		}
		added, _, err := p.deltaFiles(ctx, st, s)
		if err != nil {
			return err
		}
		for _, e := range added {
			if mine[e.file.FileName] {
				return catalogs.Errorf(catalogs.ErrFailedPrecondition,
					"table %s: commit %s: data file %s landed meanwhile in snapshot %d (commit user %s): nothing committed",
					st.ident, user, e.file.FileName, s.ID, s.CommitUser)
			}
		}
	}
	return nil
}

// refuseIndexed is refuseClaimed's check before the first attempt, when
// the provider keeps a reference index of the table.
func (p *Provider) refuseIndexed(ctx context.Context, st *tableState, user string, metas []receiptMeta) error {
	if !p.refs.get().Holds(st.dir) {
		return nil
	}
	var files []string
	for _, m := range metas {
		files = append(files, m.Files...)
	}
	f, err := p.indexed(ctx, st, files)
	if err != nil || f == "" {
		return err
	}
	return catalogs.Errorf(catalogs.ErrFailedPrecondition,
		"table %s: commit %s: data file %s is already referenced by snapshot %d or an earlier one: nothing committed", st.ident, user, f, st.snap.ID)
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
	kind := kindAppend
	if overwrite {
		kind = kindOverwrite
	}
	zero := int64(0)
	s := &snapshot{Version: snapshotVersion, ID: next, SchemaID: st.schema.ID,
		BaseManifestList: baseName, BaseManifestListSize: &baseSize,
		DeltaManifestList: deltaName, DeltaManifestListSize: &deltaSize,
		CommitUser: user, CommitIdentifier: batchCommitIdentifier, CommitKind: kind,
		TimeMillis: p.now().UnixMilli(), TotalRecordCount: prevTotal + added - deletedRows,
		DeltaRecordCount: added - deletedRows, NextRowID: &zero}
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
