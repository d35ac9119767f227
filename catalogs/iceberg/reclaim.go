package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Reclaim deletes the orphan files of every table of the catalog
// (catalogs.Reclaimer): files in the table's data and metadata
// directories, older than opts.MinAge, that the table's metadata does not
// reach. Those are staged Parquet files of writes that died before their
// commit (a killed gateway), and the manifests, manifest lists and
// metadata.json files of commit attempts that lost the compare-and-swap or
// never finished.
//
// Only files this backend's layout produces are candidates (data:
// .parquet, .orc, .avro, .puffin; metadata: *.metadata.json and .avro);
// anything else (version-hint.text, a statistics file) is left alone.
// Tables whose locations nest in one another are skipped: one's files
// would look like the other's orphans.
func (p *Provider) Reclaim(ctx context.Context, opts catalogs.ReclaimOptions) (catalogs.ReclaimReport, error) {
	var tables []catalogs.TableIdent
	if opts.MinAge > 0 {
		var err error
		if tables, err = catalogs.AllTables(ctx, p); err != nil {
			return catalogs.ReclaimReport{}, err
		}
	}
	// Every table's location first: a table whose location nests in
	// another's is skipped.
	locs := make([]string, len(tables))
	loadErrs := make([]error, len(tables))
	at := map[string]int{}
	for i, t := range tables {
		at[t.Key()] = i
		tbl, err := p.load(ctx, t)
		if err != nil {
			loadErrs[i] = err
			continue
		}
		locs[i], _ = canonPath(tbl.Location())
	}
	r := lake.Reclaimer{Log: p.log, MetadataName: "metadata", BeforeRecheck: p.beforeRecheck}
	rep, err := lake.All(ctx, p.name, opts, tables, func(ctx context.Context, t catalogs.TableIdent, cutoff time.Time) (catalogs.ReclaimReport, error) {
		i := at[t.Key()]
		if loadErrs[i] != nil {
			return catalogs.ReclaimReport{}, loadErrs[i]
		}
		if j := overlapping(locs, i); j >= 0 {
			return catalogs.ReclaimReport{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"table %s: reclaim skipped: its location %s overlaps table %s's", t, locs[i], tables[j])
		}
		tr, err := p.reclaimTable(ctx, t, opts)
		if err != nil {
			return catalogs.ReclaimReport{}, err
		}
		return r.Reclaim(ctx, t, tr, opts, cutoff)
	})
	if opts.MinAge <= 0 {
		return rep, err
	}
	for i := range locs {
		if loadErrs[i] != nil {
			// A table whose location is unknown may be any directory's:
			// no staged create's files are judged this run.
			return rep, err
		}
	}
	rc, cerr := p.reclaimCreates(ctx, r, opts, locs)
	rep.Add(rc)
	return rep, errors.Join(err, cerr)
}

// overlapping returns the index of another location equal to, inside or
// around locs[i], or -1.
func overlapping(locs []string, i int) int {
	for j, l := range locs {
		if j != i && l != "" && (l == locs[i] || within(l, locs[i]) || within(locs[i], l)) {
			return j
		}
	}
	return -1
}

// reclaimTable is one table's side of the floor's reclaim (lake.Table):
// its candidates are the files of its metadata and data directories this
// layout produces, its references what its metadata reaches.
type reclaimTable struct {
	p      *Provider
	t      catalogs.TableIdent
	tbl    *table.Table // as first read
	root   string       // the table's location, canonical
	fsys   iceio.IO
	lister iceio.ListableIO
	refs   *refs
	read   bool // Refs has read tbl
}

func (p *Provider) reclaimTable(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (*reclaimTable, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	root, ok := canonPath(tbl.Location())
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim: location %q is not a path or URI", t, tbl.Location())
	}
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s: reclaim: storage", t))
	}
	lister, ok := fsys.(iceio.ListableIO)
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim: storage cannot list files", t)
	}
	r := &reclaimTable{p: p, t: t, tbl: tbl, root: root, fsys: fsys, lister: lister, refs: newRefs()}
	if err := r.refs.addHeld(ctx, t, opts.Held); err != nil {
		return nil, err
	}
	return r, nil
}

// Refs reads the table's metadata: first the one loaded, then the
// current one (when it moved on, the table being the same).
func (r *reclaimTable) Refs(ctx context.Context) (bool, error) {
	tbl := r.tbl
	if r.read {
		again, err := r.p.load(ctx, r.t)
		if err != nil {
			return false, err
		}
		if again.Metadata().TableUUID() != r.tbl.Metadata().TableUUID() {
			return false, nil
		}
		if again.MetadataLocation() == r.tbl.MetadataLocation() {
			return true, nil
		}
		tbl = again
	}
	if err := r.refs.addTable(r.fsys, tbl); err != nil {
		return false, mapErr(err, fmt.Sprintf("table %s: reclaim: read metadata", r.t))
	}
	r.read = true
	return true, nil
}

func (r *reclaimTable) Referenced(loc string) bool { return r.refs.has(loc) }

func (r *reclaimTable) Held(loc string) bool { return r.refs.held(loc) }

// Candidates walks the table's metadata and data directories; a directory
// outside the table's location (write.data.path elsewhere) is not walked.
func (r *reclaimTable) Candidates(ctx context.Context, fn func(lake.Candidate) error) error {
	seen := map[string]bool{}
	for _, dir := range []struct {
		path string
		meta bool
	}{{metadataRoot(r.tbl), true}, {dataRoot(r.tbl), false}} {
		if d, ok := canonPath(dir.path); !ok || !(d == r.root || within(d, r.root)) {
			r.p.log.WarnContext(ctx, "reclaim: directory outside the table's location not examined", "table", r.t.String(), "dir", dir.path)
			continue
		}
		werr := r.lister.WalkDir(dir.path, func(name string, d fs.DirEntry, err error) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err != nil || d == nil || d.IsDir() || d.Type()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0 {
				return nil // an unreadable entry is kept; a partial listing deletes less, never more
			}
			c, ok := canonPath(name)
			if !ok || seen[c] || !within(c, r.root) {
				return nil
			}
			seen[c] = true
			kind, ok := candidate(path.Base(c), dir.meta)
			if !ok {
				return nil
			}
			info, err := d.Info()
			if err != nil || info.ModTime().IsZero() {
				return nil
			}
			return fn(lake.Candidate{Path: name, Ref: name, Kind: kind, Size: info.Size(), Mod: info.ModTime()})
		})
		if werr != nil {
			return catalogs.Wrap(catalogs.ErrUnavailable, werr, fmt.Sprintf("table %s: reclaim: list %s", r.t, dir.path))
		}
	}
	return nil
}

// Delete deletes one orphan through the storage breaker.
func (r *reclaimTable) Delete(ctx context.Context, loc string) error {
	_, err := catalogs.Guard(ctx, r.p.storage, true, func(context.Context) (struct{}, error) {
		return struct{}{}, removeFile(r.fsys, loc)
	})
	return err
}

// candidate tells whether a file name is one this backend's layout
// produces in the metadata (meta) or data directory, and of which kind.
func candidate(name string, meta bool) (lake.FileKind, bool) {
	switch {
	case strings.HasSuffix(name, ".metadata.json"), strings.HasSuffix(name, ".metadata.json.gz"):
		return lake.KindMetadata, true
	case meta:
		return lake.KindManifest, strings.HasSuffix(name, ".avro")
	}
	for _, ext := range []string{".parquet", ".orc", ".avro", ".puffin"} {
		if strings.HasSuffix(name, ext) {
			return lake.KindData, true
		}
	}
	return lake.KindData, false
}

// metadataRoot is where the table writes metadata files.
func metadataRoot(tbl *table.Table) string {
	if p := tbl.Properties()[table.WriteMetadataPathKey]; p != "" {
		return strings.TrimSuffix(p, "/")
	}
	return strings.TrimSuffix(tbl.Location(), "/") + "/metadata"
}

// canonPath puts a file location in one spelling for comparisons: a local
// path for file: URIs and bare paths, scheme://authority/key otherwise
// (s3a and s3n as s3). It never unescapes, and refuses a location with a
// ".." segment, so nothing it accepts can step out of a directory.
func canonPath(loc string) (string, bool) {
	if loc == "" || strings.ContainsAny(loc, "\x00\\") {
		return "", false
	}
	var scheme, rest string
	switch {
	case strings.HasPrefix(loc, "/"):
		scheme, rest = "", loc
	case strings.HasPrefix(loc, "file://"):
		scheme, rest = "", strings.TrimPrefix(loc, "file://")
		rest = strings.TrimPrefix(rest, "localhost")
		if !strings.HasPrefix(rest, "/") {
			return "", false
		}
	case strings.HasPrefix(loc, "file:/"):
		scheme, rest = "", strings.TrimPrefix(loc, "file:")
	default:
		s, r, ok := strings.Cut(loc, "://")
		if !ok || s == "" || r == "" {
			return "", false
		}
		scheme = strings.ToLower(s)
		if scheme == "s3a" || scheme == "s3n" {
			scheme = "s3"
		}
		rest = "/" + r
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == ".." {
			return "", false
		}
	}
	clean := path.Clean(rest)
	if scheme == "" {
		return clean, true
	}
	return scheme + ":/" + clean, true
}

// within tells whether the canonical path c lies strictly under the
// canonical directory dir.
func within(c, dir string) bool {
	return strings.HasPrefix(c, strings.TrimSuffix(dir, "/")+"/")
}

// refs is the set of files a table's metadata reaches.
type refs struct {
	paths map[string]bool // canonical paths
	// names holds base names too: generated names carry a UUID, so a
	// referenced file spelt another way (an escaped character, another
	// scheme alias) is still recognised and kept.
	names     map[string]bool
	heldPaths map[string]bool
	lists     map[string]bool // manifest lists read
	manifests map[string]bool // manifests read
	// live, when set, adds only the live entries' files of a manifest
	// (added and existing), not those it records as deleted: what
	// snapshot expiry keeps (the snapshots that still read a deleted file
	// reach it through their own manifests, where it is live).
	live bool
}

func newRefs() *refs {
	return &refs{paths: map[string]bool{}, names: map[string]bool{}, heldPaths: map[string]bool{},
		lists: map[string]bool{}, manifests: map[string]bool{}}
}

func (r *refs) add(loc string) {
	if loc == "" {
		return
	}
	if c, ok := canonPath(loc); ok {
		r.paths[c] = true
	}
	r.names[path.Base(loc)] = true
}

// has tells whether loc is referenced (by path or by name).
func (r *refs) has(loc string) bool {
	c, ok := canonPath(loc)
	return !ok || r.paths[c] || r.names[path.Base(loc)]
}

// held tells whether a live unit of work holds loc.
func (r *refs) held(loc string) bool {
	c, ok := canonPath(loc)
	return !ok || r.heldPaths[c] || r.heldPaths[path.Base(loc)]
}

// addTable adds what tbl's metadata reaches: the current metadata file
// and those of the metadata log, statistics files, and for every snapshot
// (not only the current one) its manifest list, manifests and the data
// and delete files of every entry, deleted ones included. Manifests and
// lists are immutable, so each is read once whatever the calls.
func (r *refs) addTable(fsys iceio.IO, tbl *table.Table) error {
	meta := tbl.Metadata()
	r.add(tbl.MetadataLocation())
	for e := range meta.PreviousFiles() {
		r.add(e.MetadataFile)
	}
	for s := range meta.Statistics() {
		r.add(s.StatisticsPath)
	}
	for s := range meta.PartitionStatistics() {
		r.add(s.StatisticsPath)
	}
	for _, s := range meta.Snapshots() {
		if err := r.addSnapshot(fsys, s); err != nil {
			return err
		}
	}
	return nil
}

// addSnapshot adds what one snapshot reaches: its manifest list, its
// manifests and the data and delete files of every entry, deleted ones
// included.
func (r *refs) addSnapshot(fsys iceio.IO, s table.Snapshot) error {
	if s.ManifestList != "" {
		if r.lists[s.ManifestList] {
			return nil
		}
		r.add(s.ManifestList)
	}
	for _, m := range s.ManifestLocations {
		r.add(m)
	}
	err := protect(catalogs.ErrUnavailable, "read manifests", func() error {
		mfs, err := s.Manifests(fsys)
		if err != nil {
			return fmt.Errorf("snapshot %d: manifest list %s: %w", s.SnapshotID, s.ManifestList, err)
		}
		for _, mf := range mfs {
			r.add(mf.FilePath())
			if r.manifests[mf.FilePath()] {
				continue
			}
			entries, err := mf.FetchEntries(fsys, r.live)
			if err != nil {
				return fmt.Errorf("snapshot %d: manifest %s: %w", s.SnapshotID, mf.FilePath(), err)
			}
			for _, e := range entries {
				if df := e.DataFile(); df != nil {
					r.add(df.FilePath())
				}
			}
			r.manifests[mf.FilePath()] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.ManifestList != "" {
		r.lists[s.ManifestList] = true
	}
	return nil
}

// addHeld adds the files of the receipts live units of work hold.
func (r *refs) addHeld(ctx context.Context, t catalogs.TableIdent, held func(context.Context, catalogs.TableIdent) []catalogs.WriteReceipt) error {
	if held == nil {
		return nil
	}
	rms, err := parseReceipts(t, held(ctx, t))
	if err != nil {
		return fmt.Errorf("table %s: reclaim: held receipts: %w", t, err)
	}
	for _, rm := range rms {
		for _, f := range rm.Files {
			if c, ok := canonPath(f.Path); ok {
				r.heldPaths[c] = true
			}
			r.heldPaths[path.Base(f.Path)] = true
		}
	}
	return nil
}
