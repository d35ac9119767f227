package paimon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

var _ catalogs.Reclaimer = (*Provider)(nil)

// Reclaim deletes the orphan files of every table of the catalog
// (catalogs.Reclaimer): files of the table's directory, older than
// opts.MinAge, that no snapshot, tag or long-lived changelog reaches and
// no live unit of work holds. Those are the staged data files of writes
// that died before their commit (a killed gateway, an abandoned Paimon
// Java writer), the manifests and manifest lists of commit attempts that
// lost the put-if-absent of their snapshot or never finished, and the
// hidden temporary files of an interrupted atomic write.
//
// Only files this layout produces are candidates: data-* and changelog-*
// (.parquet, .orc, .avro) in a bucket-N directory, manifest-* (manifests
// and manifest lists) in manifest/, and .*.tmp in manifest/, snapshot/,
// schema/ and tag/. Snapshots, schemas, tags, hints, index and statistics
// files are never touched. A Paimon Java writer's files are not
// referenced until its coordinator commits them: MinAge is what protects
// them, so it must exceed the longest a Java job holds written files
// before committing (docs/paimon.md). A table with branches (branch/) is
// skipped: its branches' snapshots are not read here.
func (p *Provider) Reclaim(ctx context.Context, opts catalogs.ReclaimOptions) (catalogs.ReclaimReport, error) {
	r := lake.Reclaimer{Log: p.log, MetadataName: "temporary", BeforeRecheck: reclaimBeforeRecheck}
	return r.ReclaimProvider(ctx, p.name, p, opts, func(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (lake.Table, error) {
		return p.reclaimTable(ctx, t, opts)
	}, p.marks(), p.createDir)
}

// createDir is the directory of a staged create of t that may belong to
// no table (lake.CreateDir): a table exists once its schema directory
// does (as ListTables counts it), and the create's files are those this
// layout produces (candidate: data files, and the manifests of a first
// commit that failed and was dropped).
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
		FS: p.fs, Dir: dir, TableEntry: "schema",
		Candidate: candidate,
		HeldRef:   func(rel string) bool { return held[rel] || held[path.Base(rel)] },
	}, nil
}

// reclaimTable is one table's side of the floor's reclaim (lake.Table):
// its candidates are the files of its directory this layout produces, its
// references what its snapshots, tags and long-lived changelogs reach.
type reclaimTable struct {
	p    *Provider
	st   *tableState
	refs *reclaimRefs
	held map[string]bool
}

func (p *Provider) reclaimTable(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (*reclaimTable, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	if branches, err := p.fs.List(ctx, st.dir+"/branch"); err != nil || len(branches) > 0 {
		if err != nil {
			return nil, lake.MapErr(err, fmt.Sprintf("table %s: reclaim: list branches", t))
		}
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim skipped: the table has branches (%s), whose snapshots this reclaimer does not read", t, strings.Join(branches, ", "))
	}
	held, err := heldFiles(ctx, t, opts.Held)
	if err != nil {
		return nil, err
	}
	return &reclaimTable{p: p, st: st, refs: newReclaimRefs(p, st), held: held}, nil
}

// Refs reads the snapshots, tags and changelogs not read yet.
func (r *reclaimTable) Refs(ctx context.Context) (bool, error) { return true, r.refs.collect(ctx) }

func (r *reclaimTable) Referenced(rel string) bool { return r.refs.has(rel) }

func (r *reclaimTable) Held(rel string) bool { return r.held[rel] || r.held[path.Base(rel)] }

func (r *reclaimTable) Candidates(ctx context.Context, fn func(lake.Candidate) error) error {
	return r.p.fs.Walk(ctx, r.st.dir, func(rel string, size int64, mod time.Time) error {
		kind, ok := candidate(rel)
		if !ok {
			return nil
		}
		return fn(lake.Candidate{Path: r.st.dir + "/" + rel, Ref: rel, Kind: kind, Size: size, Mod: mod})
	})
}

func (r *reclaimTable) Delete(ctx context.Context, p string) error { return r.p.fs.Remove(ctx, p) }

// reclaimBeforeRecheck, set by tests only, runs between the listing and
// the second read of the snapshots, where a commit may land.
var reclaimBeforeRecheck func(catalogs.TableIdent)

// reservedDirs are the table directory's own directories: no data file
// lives under them.
var reservedDirs = map[string]bool{
	"snapshot": true, "schema": true, "manifest": true, "tag": true, "branch": true, "changelog": true,
	"consumer": true, "index": true, "statistics": true, "service": true,
}

// candidate tells whether a file (relative to the table directory) is
// one this layout produces and a reclaimer may delete, and of which kind.
func candidate(rel string) (lake.FileKind, bool) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	top, _, _ := strings.Cut(dir, "/")
	switch {
	case strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp"):
		// The temporary file of an atomic write (storage.writeTemp,
		// Paimon's FileIO) that never got its name.
		return lake.KindMetadata, dir == "manifest" || dir == "snapshot" || dir == "schema" || dir == "tag"
	case dir == "manifest":
		return lake.KindManifest, strings.HasPrefix(name, "manifest-")
	case dir == "" || reservedDirs[top] || !strings.HasPrefix(path.Base(dir), "bucket-"):
		return lake.KindData, false
	case !strings.HasPrefix(name, "data-") && !strings.HasPrefix(name, "changelog-"):
		return lake.KindData, false
	}
	for _, ext := range []string{".parquet", ".orc", ".avro"} {
		if strings.HasSuffix(name, ext) {
			return lake.KindData, true
		}
	}
	return lake.KindData, false
}

// reclaimRefs is what a table's snapshots, tags and long-lived changelogs
// reach: manifest lists, manifests and data files, relative to the table
// directory. Data files are known by base name too: their names carry a
// UUID, so a referenced file whose partition directory is spelt another
// way (another escaping) is still recognised and kept.
type reclaimRefs struct {
	walk  refWalk
	names map[string]bool // data file base names
	seen  map[string]bool // snapshot, tag and changelog files read
}

func newReclaimRefs(p *Provider, st *tableState) *reclaimRefs {
	return &reclaimRefs{
		walk:  refWalk{p: p, st: st, refs: map[string]bool{}, lists: map[string]bool{}, manifests: map[string]bool{}},
		names: map[string]bool{}, seen: map[string]bool{},
	}
}

// has tells whether rel is referenced.
func (r *reclaimRefs) has(rel string) bool {
	if name, ok := strings.CutPrefix(rel, "manifest/"); ok {
		return r.walk.lists[name] || r.walk.manifests[name]
	}
	return r.walk.refs[rel] || r.names[path.Base(rel)]
}

// collect reads every snapshot, tag and changelog file not read yet (a
// second call sees what landed since the first) and adds what each
// references. Manifests and lists are immutable: each is read once.
func (r *reclaimRefs) collect(ctx context.Context) error {
	for _, d := range []string{"snapshot", "tag", "changelog"} {
		if err := r.collectDir(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// collectDir reads the snapshot, tag or changelog files (dir names which)
// not read yet and adds what each references.
func (r *reclaimRefs) collectDir(ctx context.Context, dir string) error {
	p, st := r.walk.p, r.walk.st
	prefix := dir + "-"
	names, err := p.fs.List(ctx, st.dir+"/"+dir)
	if err != nil {
		return lake.MapErr(err, fmt.Sprintf("table %s: reclaim: list %s", st.ident, dir))
	}
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok || rest == "" || strings.HasPrefix(n, ".") {
			continue
		}
		if dir != "tag" {
			if _, err := strconv.ParseInt(rest, 10, 64); err != nil {
				continue
			}
		}
		f := dir + "/" + n
		if r.seen[f] {
			continue
		}
		b, err := p.fs.Read(ctx, st.dir+"/"+f)
		if lake.IsNotExist(err) {
			continue // expired meanwhile
		}
		if err != nil {
			return lake.MapErr(err, fmt.Sprintf("table %s: reclaim: read %s", st.ident, f))
		}
		if bytes.Equal(b, unwrittenMark) {
			// The table is being dropped (its create failed): gone.
			return catalogs.Errorf(catalogs.ErrNotFound, "table %s: reclaim: being dropped", st.ident)
		}
		var s snapshot
		if err := json.Unmarshal(b, &s); err != nil {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim: %s is not Paimon snapshot JSON: %v", st.ident, f, err)
		}
		if err := r.add(ctx, &s); err != nil {
			return err
		}
		r.seen[f] = true
	}
	for k := range r.walk.refs {
		r.names[path.Base(k)] = true
	}
	return nil
}

// add adds one snapshot's base, delta and changelog manifest lists.
func (r *reclaimRefs) add(ctx context.Context, s *snapshot) error {
	if err := r.walk.add(ctx, s); err != nil {
		return err
	}
	if s.ChangelogManifestList != nil && *s.ChangelogManifestList != "" {
		return r.walk.add(ctx, &snapshot{BaseManifestList: *s.ChangelogManifestList})
	}
	return nil
}

// heldFiles are the files (relative to the table directory, and their
// base names) of the receipts live units of work hold.
func heldFiles(ctx context.Context, t catalogs.TableIdent, held func(context.Context, catalogs.TableIdent) []catalogs.WriteReceipt) (map[string]bool, error) {
	out := map[string]bool{}
	if held == nil {
		return out, nil
	}
	_, metas, err := decodeReceipts(t, held(ctx, t))
	if err != nil {
		return nil, fmt.Errorf("table %s: reclaim: held receipts: %w", t, err)
	}
	for _, m := range metas {
		for _, f := range m.Files {
			out[f] = true
			out[path.Base(f)] = true
		}
	}
	return out, nil
}
