package iceberg

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
)

// CommitIDKey is the snapshot summary property that records the commit id
// of a snapshot this backend writes for one commit.
const CommitIDKey = "flightgw.commit-id"

// CommitIDsKey is the snapshot summary property of a snapshot that merged
// several commits (group commit): a JSON object of each commit id to the
// rows that commit added, {"id":rows,...}. A snapshot carries either this
// or CommitIDKey.
const CommitIDsKey = "flightgw.commit-ids"

// Commit appends the receipts' files under a fresh commit id. Concurrent
// commits to the same table from this provider are merged into one
// snapshot (group commit, commit.group.enabled); on a conflict with
// another process the table is reloaded and the commit retried with
// exponential backoff and jitter, bounded by commit.retry.num-retries and
// commit.retry.total-timeout-ms; Retried counts the conflicts. On failure
// the staged files stay in place for the caller to retry or Discard.
func (p *Provider) Commit(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return p.commit(ctx, t, uuid.NewString(), receipts, false)
}

// CommitOnce commits like Commit and records commitID. When a snapshot
// with commitID has already landed it returns that snapshot and appends
// nothing, with Duplicate set when none of the receipts' files is in it.
func (p *Provider) CommitOnce(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: commit id is empty", t)
	}
	return p.commit(ctx, t, commitID, receipts, false)
}

// CommitOverwrite replaces every data file of the current snapshot with the
// receipts' files in one snapshot, with CommitOnce's rules when commitID is
// set. An overwrite is never merged with other commits; it lands after the
// commits queued before it and before those queued after it.
func (p *Provider) CommitOverwrite(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		commitID = uuid.NewString()
	}
	return p.commit(ctx, t, commitID, receipts, true)
}

func (p *Provider) commit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt, overwrite bool) (catalogs.CommitOutcome, error) {
	if _, err := p.ident(t); err != nil {
		return catalogs.CommitOutcome{}, err
	}
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	p.unsettled.begin(commitID)
	out, err := p.submit(ctx, t, newMember(ctx, commitID, rms, overwrite))
	p.unsettled.end(commitID, err)
	return out, err
}

// FindCommit looks for the snapshot that recorded commitID. RowCount is
// the rows that commit added: the snapshot's added-records, or for a
// merged snapshot the commit's own rows as CommitIDsKey records them.
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
	return catalogs.CommitRecord{Outcome: outcome(s, 0), RowCount: commitRows(s, commitID)}, true, nil
}

// MatchCommit looks commitID up like FindCommit and tells whether the
// snapshot that recorded it added exactly the receipts' data files: all
// the files it added when it recorded commitID alone (CommitIDKey); when
// it merged several commits (CommitIDsKey), which does not record each
// commit's files, the receipts' files must be among the snapshot's and
// their rows the rows it recorded for commitID.
func (p *Provider) MatchCommit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitRecord, bool, bool, error) {
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitRecord{}, false, false, err
	}
	if commitID == "" {
		return catalogs.CommitRecord{}, false, false, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: commit id is empty", t)
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return catalogs.CommitRecord{}, false, false, err
	}
	s := findSnapshot(tbl.Metadata(), commitID)
	if s == nil {
		return catalogs.CommitRecord{}, false, false, nil
	}
	rec := catalogs.CommitRecord{Outcome: outcome(s, 0), RowCount: commitRows(s, commitID)}
	added, err := addedFiles(ctx, tbl, s)
	if err != nil {
		return rec, true, false, mapErr(err, fmt.Sprintf("table %s: commit %s: read the files of snapshot %d", t, commitID, s.SnapshotID))
	}
	want := map[string]bool{}
	for _, rm := range rms {
		for _, f := range rm.Files {
			if !added[f.Path] {
				return rec, true, false, nil
			}
			want[f.Path] = true
		}
	}
	if s.Summary.Properties[CommitIDKey] == commitID {
		return rec, true, len(want) == len(added), nil
	}
	var rows uint64
	for _, r := range receipts {
		rows += r.RowCount
	}
	return rec, true, rows == rec.RowCount, nil
}

// findSnapshot returns the newest snapshot that recorded commitID.
func findSnapshot(meta table.Metadata, commitID string) *table.Snapshot {
	snaps := meta.Snapshots()
	for i := len(snaps) - 1; i >= 0; i-- {
		s := &snaps[i]
		if s.Summary == nil {
			continue
		}
		if s.Summary.Properties[CommitIDKey] == commitID {
			return s
		}
		if _, ok := mergedRows(s, commitID); ok {
			return s
		}
	}
	return nil
}

// mergedRows looks commitID up in a merged snapshot's CommitIDsKey.
func mergedRows(s *table.Snapshot, commitID string) (uint64, bool) {
	v, ok := s.Summary.Properties[CommitIDsKey]
	if !ok {
		return 0, false
	}
	// Most snapshots do not name the id: skip decoding them.
	key, _ := json.Marshal(commitID)
	if !strings.Contains(v, string(key)) {
		return 0, false
	}
	var rows map[string]uint64
	if json.Unmarshal([]byte(v), &rows) != nil {
		return 0, false
	}
	n, ok := rows[commitID]
	return n, ok
}

// commitRows is the rows commitID added in s.
func commitRows(s *table.Snapshot, commitID string) uint64 {
	if n, ok := mergedRows(s, commitID); ok {
		return n
	}
	n, _ := strconv.ParseUint(s.Summary.Properties["added-records"], 10, 64)
	return n
}

func outcome(s *table.Snapshot, retried uint32) catalogs.CommitOutcome {
	return catalogs.CommitOutcome{SnapshotID: s.SnapshotID, CommittedAt: time.UnixMilli(s.TimestampMs).UTC(), Retried: retried}
}

// attempt makes one try at committing files on top of tbl, recording
// summary (the commit ids) in the new snapshot. iceberg-go's own retry is
// bypassed (oneShot fails fast on a conflict) so that runRound counts
// conflicts and re-checks the commit ids each time; its duplicate-file
// check is too, runRound's prepare makes it per member. It returns the new
// snapshot, or nil when there was nothing to commit. An attempt that did
// not land leaves nothing behind: lostAttempt deletes what it wrote.
func (p *Provider) attempt(ctx context.Context, tbl *table.Table, summary ice.Properties, files []ice.DataFile, overwrite bool,
	change *schemaChange) (*table.Snapshot, error) {
	cat := &oneShot{p: p, change: change}
	meta := tbl.Metadata()
	if change != nil {
		meta = change.meta
	}
	// The manifests, the manifest list and (on a SQL catalog) the metadata
	// file are written under the table's encryption as its data files.
	enc, err := encryptionFor(p.name+"."+strings.Join(tbl.Identifier(), "."), tbl.Properties(), meta, tbl.Location())
	if err != nil {
		return nil, err
	}
	if ctx, err = p.encryptContext(ctx, enc); err != nil {
		return nil, err
	}
	rec := &recordingIO{}
	wrapped := table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), rec.wrap(tbl.FS), cat)
	var committed *table.Table
	err = protect(catalogs.ErrInvalidArgument, "commit", func() error {
		files, err := withRowLineage(meta, files)
		if err != nil {
			return err
		}
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
			if err := txn.ReplaceDataFilesWithDataFiles(ctx, old, files, summary); err != nil {
				return err
			}
		} else {
			if len(files) == 0 {
				return nil
			}
			if err := txn.AddDataFiles(ctx, files, summary, table.WithoutDuplicateCheck()); err != nil {
				return err
			}
		}
		committed, err = txn.Commit(ctx)
		return err
	})
	if err != nil {
		p.lostAttempt(context.WithoutCancel(ctx), tbl, cat, rec)
		return nil, err
	}
	if committed == nil {
		return nil, nil
	}
	s := committed.Metadata().SnapshotByID(cat.snapshotID)
	if s == nil || s.Summary == nil || !recorded(s, summary) {
		return nil, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: committed snapshot not found", tbl.Identifier())
	}
	return s, nil
}

// recorded reports whether s carries summary's properties.
func recorded(s *table.Snapshot, summary ice.Properties) bool {
	for k, v := range summary {
		if s.Summary.Properties[k] != v {
			return false
		}
	}
	return true
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
// iceberg-go does not retry, remembering what it sent so that a lost
// attempt can be cleaned up.
type oneShot struct {
	p *Provider
	// change, when set, is committed with the snapshot, before it.
	change *schemaChange
	// called is set once the catalog was asked to commit; lost once it
	// answered that it did not (the compare-and-swap lost).
	called, lost bool
	// written is set when the lost attempt may have written a metadata
	// file (a SQL catalog writes it before its compare-and-swap; a failed
	// requirement is checked before that).
	written    bool
	snapshotID int64 // the snapshot the attempt adds
}

func (o *oneShot) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	return o.p.cat.LoadTable(ctx, id)
}

func (o *oneShot) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	type res struct {
		meta table.Metadata
		loc  string
	}
	switch {
	case o.change != nil && o.change.create:
		reqs = slices.Clone(o.change.reqs)
		ups = append(slices.Clone(o.change.updates), ups...)
	case o.change != nil:
		reqs = append(slices.Clone(o.change.reqs), reqs...)
		ups = append(slices.Clone(o.change.updates), ups...)
	}
	o.snapshotID, _ = addedSnapshot(ups)
	r, err := catalogs.Guard(ctx, o.p.remote, false, func(ctx context.Context) (res, error) {
		o.called = true
		m, l, err := o.p.cat.CommitTable(ctx, id, reqs, ups)
		return res{m, l}, err
	})
	if err == nil {
		return r.meta, r.loc, nil
	}
	if isConflict(err) && !errors.Is(err, catalog.ErrNoSuchTable) {
		o.lost = true
		o.written = !strings.Contains(err.Error(), "requirement failed")
		return nil, "", fmt.Errorf("%w: %v", errConflict, err)
	}
	return nil, "", err
}

// addedSnapshot finds the snapshot an update set adds: its id and its
// manifest list (the update types are internal to iceberg-go; their JSON
// is not).
func addedSnapshot(ups []table.Update) (int64, string) {
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
			return v.Snapshot.ID, v.Snapshot.ManifestList
		}
	}
	return 0, ""
}

// recordingIO remembers every file a commit attempt creates through the
// table's storage (its manifests and manifest list), so that an attempt
// that did not land can delete them, whether it lost the compare-and-swap
// or ran out of time while writing them.
type recordingIO struct {
	mu    sync.Mutex
	paths []string
}

func (r *recordingIO) wrap(fsF func(context.Context) (iceio.IO, error)) func(context.Context) (iceio.IO, error) {
	return func(ctx context.Context) (iceio.IO, error) {
		fsys, err := fsF(ctx)
		if err != nil {
			return nil, err
		}
		w, ok := fsys.(iceio.WriteFileIO)
		if !ok {
			return fsys, nil // iceberg-go reports the read-only storage
		}
		return &recordingFS{WriteFileIO: w, rec: r}, nil
	}
}

func (r *recordingIO) add(path string) {
	r.mu.Lock()
	r.paths = append(r.paths, path)
	r.mu.Unlock()
}

func (r *recordingIO) created() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.paths)
}

// recordingFS is the storage of one attempt. It offers only IO and
// WriteFileIO: iceberg-go falls back to Open where it would Stat.
type recordingFS struct {
	iceio.WriteFileIO
	rec *recordingIO
}

func (f *recordingFS) Create(name string) (iceio.FileWriter, error) {
	f.rec.add(name)
	return f.WriteFileIO.Create(name)
}

func (f *recordingFS) WriteFile(name string, b []byte) error {
	f.rec.add(name)
	return f.WriteFileIO.WriteFile(name, b)
}

// lostAttempt deletes what a failed attempt wrote when it certainly did
// not land: it lost the compare-and-swap, it never reached the catalog, or
// (SQL catalogs, whose commit is settled when the call returns) a reload
// shows no trace of its snapshot. A REST commit in an unknown state keeps
// its files: the catalog may still apply it.
func (p *Provider) lostAttempt(ctx context.Context, tbl *table.Table, cat *oneShot, rec *recordingIO) {
	lost := cat.lost || !cat.called
	sql := p.cfg.catalogType == TypeSQL
	create := cat.change != nil && cat.change.create
	if !lost && sql && cat.snapshotID != 0 {
		now, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (*table.Table, error) {
			return p.cat.LoadTable(ctx, tbl.Identifier())
		})
		// A create that finds no table did not land either: a SQL
		// catalog's commit is settled when the call returns.
		lost = (err == nil && now.Metadata().SnapshotByID(cat.snapshotID) == nil) ||
			(create && errors.Is(err, catalog.ErrNoSuchTable))
		cat.written = lost
	}
	if !lost {
		return
	}
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		return
	}
	for _, path := range rec.created() {
		_ = removeFile(fsys, path)
	}
	if sql && cat.written && cat.snapshotID != 0 {
		dir, base := metadataDir(tbl)
		if create {
			// The metadata file of a create is its version 0.
			dir, base = metadataRoot(tbl), -1
		}
		p.dropLostMetadata(ctx, tbl, fsys, dir, base, cat.snapshotID)
	}
}

// metadataDir is the directory of tbl's current metadata file and that
// file's version; base is -1 when its name has none.
func metadataDir(tbl *table.Table) (dir string, base int) {
	loc := tbl.MetadataLocation()
	slash := strings.LastIndex(loc, "/")
	if slash < 0 {
		return "", -1
	}
	return loc[:slash], metadataVersion(loc[slash+1:])
}

// dropLostMetadata deletes the metadata file a SQL catalog wrote in dir
// for an attempt whose compare-and-swap lost (iceberg-go writes it before
// the UPDATE or INSERT that fails). Its name is random, but its version
// is above base, the attempt's (-1 for a create, whose file is version 0),
// and it is the one metadata file whose current snapshot is the
// attempt's, which never landed; no other file is touched.
func (p *Provider) dropLostMetadata(ctx context.Context, tbl *table.Table, fsys iceio.IO, dir string, base int, snapshotID int64) {
	if base < 0 && tbl.MetadataLocation() != "" {
		return // a current metadata file whose name has no version
	}
	marker := []byte(`"current-snapshot-id":` + strconv.FormatInt(snapshotID, 10))
	p.dropMetadataMarked(ctx, tbl, fsys, dir, base, marker)
}

// dropMetadataMarked deletes the first metadata file in dir, of a version
// above base, that holds marker (not followed by a digit).
func (p *Provider) dropMetadataMarked(ctx context.Context, tbl *table.Table, fsys iceio.IO, dir string, base int, marker []byte) {
	l, ok := fsys.(iceio.ListableIO)
	if !ok || dir == "" {
		return
	}
	type cand struct {
		name    string
		version int
	}
	var cands []cand
	_ = l.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d == nil || d.IsDir() {
			return nil
		}
		name := pathpkg.Base(filepath.ToSlash(path))
		if v := metadataVersion(name); v > base {
			cands = append(cands, cand{name, v})
		}
		return nil
	})
	slices.SortFunc(cands, func(a, b cand) int { return a.version - b.version })
	for i, c := range cands {
		if i == maxLostMetadataReads {
			break
		}
		full := dir + "/" + c.name
		if ok, err := holds(fsys, full, marker); err == nil && ok {
			if err := removeFile(fsys, full); err != nil {
				p.log.WarnContext(ctx, "iceberg commit: cannot delete the metadata file of a lost attempt",
					"table", tbl.Identifier(), "file", full, "error", err)
			}
			return
		}
	}
}

// maxLostMetadataReads bounds the metadata files a lost attempt reads to
// find its own.
const maxLostMetadataReads = 16

// metadataVersion parses the version of a metadata file name
// (00012-<uuid>.metadata.json, .gz.metadata.json too); -1 if it is none.
func metadataVersion(name string) int {
	if !strings.HasSuffix(name, ".metadata.json") {
		return -1
	}
	v, rest, ok := strings.Cut(name, "-")
	if !ok || rest == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// holds reports whether the metadata file at path holds marker (the
// snapshot it names current, the table uuid) not followed by a digit.
func holds(fsys iceio.IO, path string, marker []byte) (bool, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var rd io.Reader = f
	if strings.HasSuffix(path, ".gz.metadata.json") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return false, err
		}
		defer zr.Close()
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return false, err
	}
	for rest := b; ; {
		i := bytes.Index(rest, marker)
		if i < 0 {
			return false, nil
		}
		rest = rest[i+len(marker):]
		if len(rest) == 0 || rest[0] < '0' || rest[0] > '9' {
			return true, nil // not a longer id with this prefix
		}
	}
}
