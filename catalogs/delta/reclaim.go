package delta

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

var _ catalogs.Reclaimer = (*Provider)(nil)

// Reclaim is Delta's VACUUM for every table of the catalog
// (catalogs.Reclaimer), on the floor's reclaim (lake.Reclaimer: files
// older than opts.MinAge, held by no live unit of work, the references
// read again right before deleting).
//
// Data and deletion-vector files of the table directory are deleted
// when no retained version references them: neither a live add (nor its
// DV) nor a remove whose delta.deletedFileRetentionDuration (1 week when
// unset) has not expired since its deletionTimestamp. Hidden files and
// directories (a name starting with "_" or ".", except a partition
// directory "_c=v") are never touched, as VACUUM does, and neither is
// anything outside the table. Before anything, the table's whole
// protocol must be one this implementation reads and writes
// (vacuumProtocolCheck asks VACUUM to check reader and writer features
// alike): a feature it does not know could reference files it cannot
// see.
//
// In _delta_log, commits, checkpoints and checksums are expired by the
// protocol's metadata cleanup: only below the newest checkpoint not newer
// than the newest commit older than midnight UTC of now minus
// delta.logRetentionDuration (30 days when unset), never when
// delta.enableExpiredLogCleanup is false; the sidecars of
// _delta_log/_sidecars that no kept checkpoint references, a day after
// they were written. Interrupted atomic writes (.*.tmp) in _delta_log are
// orphans too.
func (p *Provider) Reclaim(ctx context.Context, opts catalogs.ReclaimOptions) (catalogs.ReclaimReport, error) {
	r := lake.Reclaimer{Log: p.log, MetadataName: "log", BeforeRecheck: reclaimBeforeRecheck}
	return r.ReclaimProvider(ctx, p.name, p, opts, func(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (lake.Table, error) {
		return p.vacuumTable(ctx, t, opts)
	}, p.marks(), p.createDir)
}

// createDir is the directory of a staged create of t that may belong to
// no table (lake.CreateDir): a table exists once its _delta_log does
// (as ListTables counts it, even before version 0), and the create's
// files are the directory's non-hidden ones (VACUUM's data files).
func (p *Provider) createDir(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (lake.CreateDir, error) {
	dir, err := p.tableDir(t)
	if err != nil {
		return nil, err
	}
	held, err := heldFiles(ctx, t, opts.Held)
	if err != nil {
		return nil, err
	}
	return &lake.StoreCreateDir{
		FS: p.fs, Dir: dir, TableEntry: "_delta_log",
		Candidate: func(rel string) (lake.FileKind, bool) { return lake.KindData, !hidden(rel) },
		HeldRef:   func(rel string) bool { return held[rel] },
	}, nil
}

// reclaimBeforeRecheck, set by tests only, runs between the listing and
// the second read of the log, where a commit may land.
var reclaimBeforeRecheck func(catalogs.TableIdent)

// vacuum is one table's side of the floor's reclaim (lake.Table).
type vacuum struct {
	p    *Provider
	t    catalogs.TableIdent
	dir  string
	id   string          // the table id (metaData.id) first read
	refs map[string]bool // files retained versions reference, relative to the table
	// expired are the _delta_log entries metadata cleanup deletes, as
	// every read so far agrees (the intersection: a read keeps what it
	// must).
	expired map[string]bool
	read    bool
	held    map[string]bool
}

func (p *Provider) vacuumTable(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (*vacuum, error) {
	dir, err := p.tableDir(t)
	if err != nil {
		return nil, err
	}
	held, err := heldFiles(ctx, t, opts.Held)
	if err != nil {
		return nil, err
	}
	return &vacuum{p: p, t: t, dir: dir, refs: map[string]bool{}, held: held}, nil
}

// heldFiles are the files (relative to the table directory) of the
// receipts live units of work hold.
func heldFiles(ctx context.Context, t catalogs.TableIdent, held func(context.Context, catalogs.TableIdent) []catalogs.WriteReceipt) (map[string]bool, error) {
	out := map[string]bool{}
	if held == nil {
		return out, nil
	}
	ms, err := decodeReceipts(t, held(ctx, t))
	if err != nil {
		return nil, fmt.Errorf("table %s: reclaim: held receipts: %w", t, err)
	}
	for _, m := range ms {
		for _, a := range m.Adds {
			if rel, err := dcodec.DecodePath(a.Path); err == nil {
				out[rel] = true
			}
		}
	}
	return out, nil
}

// Refs replays the latest version and adds what it references.
func (v *vacuum) Refs(ctx context.Context) (bool, error) {
	st, err := v.p.load(ctx, v.t, -1)
	if err != nil {
		return false, err
	}
	if v.id == "" {
		v.id = st.snap.Metadata.ID
	} else if st.snap.Metadata.ID != v.id {
		return false, nil // dropped and created again
	}
	if err := vacuumCheck(st); err != nil {
		return false, err
	}
	retention, err := st.snap.Metadata.DeletedFileRetention()
	if err != nil {
		return false, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: reclaim", v.t))
	}
	ref := func(p string, dv *dcodec.DeletionVector) error {
		rel, err := dcodec.DecodePath(p)
		if err != nil {
			return err
		}
		if err := v.addRef(rel); err != nil {
			return err
		}
		if dv == nil || dv.StorageType == "i" {
			return nil
		}
		dvp, err := dv.AbsolutePath()
		if err != nil {
			return err
		}
		return v.addRef(dvp)
	}
	for _, f := range st.snap.Files {
		if err := ref(f.Path, f.DeletionVector); err != nil {
			return false, v.refErr(err)
		}
	}
	for _, r := range st.snap.LiveTombstones(v.p.now(), retention) {
		if err := ref(r.Path, r.DeletionVector); err != nil {
			return false, v.refErr(err)
		}
	}
	expired, err := v.expiredLog(ctx, st)
	if err != nil {
		return false, err
	}
	if !v.read {
		v.expired, v.read = expired, true
	} else {
		for n := range v.expired {
			if !expired[n] {
				delete(v.expired, n)
			}
		}
	}
	return true, nil
}

func (v *vacuum) refErr(err error) error {
	return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: reclaim: a file reference", v.t))
}

// addRef records a referenced file. A file outside the table directory
// (an absolute path or URI) may still name one inside it under another
// spelling; VACUUM cannot tell, so the table is not vacuumed.
func (v *vacuum) addRef(rel string) error {
	if strings.Contains(rel, "://") || strings.HasPrefix(rel, "/") {
		return fmt.Errorf("the log references %q by an absolute path: VACUUM of tables with absolute paths is not supported", rel)
	}
	v.refs[path.Clean(rel)] = true
	return nil
}

// vacuumCheck is the vacuumProtocolCheck rule, applied to every table:
// VACUUM runs only when this implementation supports every reader and
// writer feature of the protocol.
func vacuumCheck(st *tableState) error {
	pr := &st.snap.Protocol
	if err := dcodec.CheckRead(pr); err != nil {
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: reclaim (VACUUM) refused", st.ident))
	}
	if err := dcodec.CheckWrite(pr); err != nil {
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: reclaim (VACUUM) refused", st.ident))
	}
	return nil
}

func (v *vacuum) Referenced(ref string) bool {
	if name, ok := strings.CutPrefix(ref, "_delta_log/"); ok {
		return !tempFile(name) && !v.expired[name]
	}
	return v.refs[ref]
}

func (v *vacuum) Held(ref string) bool { return v.held[ref] }

// Candidates are the table's non-hidden files, and the _delta_log files
// metadata cleanup may expire (commits, checkpoints, checksums) or that
// an interrupted atomic write left (.*.tmp).
func (v *vacuum) Candidates(ctx context.Context, fn func(lake.Candidate) error) error {
	return v.p.fs.Walk(ctx, v.dir, func(rel string, size int64, mod time.Time) error {
		c := lake.Candidate{Path: v.dir + "/" + rel, Ref: rel, Size: size, Mod: mod}
		if name, ok := strings.CutPrefix(rel, "_delta_log/"); ok {
			if strings.Contains(name, "/") {
				// Of the directories, only sidecars: _staged_commits and
				// anything deeper are kept.
				if sc, ok := strings.CutPrefix(name, dcodec.SidecarDir+"/"); !ok || strings.Contains(sc, "/") {
					return nil
				}
			}
			// Referenced decides: only what metadata cleanup expires, and
			// temporary files, are unreferenced.
			c.Kind = lake.KindMetadata
			return fn(c)
		}
		if hidden(rel) {
			return nil
		}
		c.Kind = lake.KindData
		return fn(c)
	})
}

func (v *vacuum) Delete(ctx context.Context, p string) error { return v.p.fs.Remove(ctx, p) }

// tempFile tells whether a _delta_log name is the temporary file of an
// atomic write (lake.Local's Create and Put), which no reader looks at.
func tempFile(name string) bool {
	return strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp")
}

// expiredLog lists _delta_log and returns the entries metadata cleanup
// expires now (sidecars as "_sidecars/<name>"). Tables with in-commit
// timestamps keep their commits and checkpoints: their commit times are
// in the commits, not in the file times used here; their unreferenced
// sidecars still go.
func (v *vacuum) expiredLog(ctx context.Context, st *tableState) (map[string]bool, error) {
	out := map[string]bool{}
	cfg := st.snap.Metadata.Configuration
	if strings.EqualFold(cfg["delta.enableExpiredLogCleanup"], "false") {
		return out, nil
	}
	retention, err := st.snap.Metadata.LogRetention()
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: reclaim", v.t))
	}
	// A commit file cleaned up is a version free again: an attempt that
	// loaded the log before it landed would win its put-if-absent and land
	// below a checkpoint, unread. No attempt outlives the commit loop's
	// total timeout: nothing younger than twice that is cleaned, whatever
	// the table's retention (as Paimon's expiry).
	retention = max(retention, 2*v.p.cfg.commit.TotalTimeout)
	var entries, sidecars []dcodec.LogEntry
	err = v.p.fs.Walk(ctx, v.dir+"/_delta_log", func(rel string, _ int64, mod time.Time) error {
		if sc, ok := strings.CutPrefix(rel, dcodec.SidecarDir+"/"); ok && !strings.Contains(sc, "/") {
			sidecars = append(sidecars, dcodec.LogEntry{Name: sc, Mod: mod})
		} else if !strings.Contains(rel, "/") {
			entries = append(entries, dcodec.LogEntry{Name: rel, Mod: mod})
		}
		return nil
	})
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: reclaim: list _delta_log", v.t))
	}
	if !strings.EqualFold(cfg["delta.enableInCommitTimestamps"], "true") {
		for _, n := range dcodec.ExpiredLogFiles(entries, dcodec.LogCleanupCutoff(v.p.now(), retention)) {
			out[n] = true
		}
	}
	if len(sidecars) == 0 {
		return out, nil
	}
	// The sidecars the checkpoints kept reference stay (and, a day, any
	// other: a checkpoint may be under way, its top-level file not yet
	// written).
	var kept []string
	for _, e := range entries {
		if !out[e.Name] {
			kept = append(kept, e.Name)
		}
	}
	refs, err := dcodec.ReferencedSidecars(ctx, storeLog{fs: v.p.fs, dir: v.dir, cache: &v.p.checkpoints}, kept)
	if err != nil {
		// Its sidecars unknown, none is deleted; the rest of VACUUM goes on.
		v.p.log.WarnContext(ctx, "delta vacuum: sidecars kept, a checkpoint is unreadable", "table", v.t.String(), "error", err)
		return out, nil
	}
	for _, n := range dcodec.ExpiredSidecars(sidecars, refs, v.p.now()) {
		out[dcodec.SidecarDir+"/"+n] = true
	}
	return out, nil
}

// hidden tells whether VACUUM leaves a file alone: one of its names
// starts with "." or "_", except a partition directory (c=v) whose
// column name starts with "_".
func hidden(rel string) bool {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, "_") && !strings.HasPrefix(s, ".") {
			continue
		}
		if i < len(segs)-1 && strings.HasPrefix(s, "_") && strings.Contains(s, "=") {
			continue
		}
		return true
	}
	return false
}
