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
	var rep catalogs.ReclaimReport
	if opts.MinAge <= 0 {
		return rep, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: reclaim: min age %v is not positive", p.name, opts.MinAge)
	}
	cutoff := time.Now().Add(-opts.MinAge)
	tables, err := catalogs.AllTables(ctx, p)
	if err != nil {
		return rep, err
	}
	var errs []error
	locs := make([]string, len(tables))
	for i, t := range tables {
		tbl, err := p.load(ctx, t)
		if errors.Is(err, catalogs.ErrNotFound) {
			continue // dropped meanwhile
		}
		if err != nil {
			rep.Tables++
			rep.TablesFailed++
			errs = append(errs, err)
			continue
		}
		locs[i], _ = canonPath(tbl.Location())
	}
	for i, t := range tables {
		if locs[i] == "" {
			continue
		}
		rep.Tables++
		if j := overlapping(locs, i); j >= 0 {
			rep.TablesFailed++
			errs = append(errs, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"table %s: reclaim skipped: its location %s overlaps table %s's", t, locs[i], tables[j]))
			continue
		}
		r, err := p.reclaimTable(ctx, t, opts, cutoff)
		rep.Add(r)
		if err != nil {
			rep.TablesFailed++
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return rep, errors.Join(errs...)
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

// orphan is an unreferenced file found in a table's directories.
type orphan struct {
	path string
	kind fileKind
	size int64
}

type fileKind int

const (
	kindData fileKind = iota
	kindManifest
	kindMetadata
)

// reclaimTable reclaims one table's orphans.
func (p *Provider) reclaimTable(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions, cutoff time.Time) (catalogs.ReclaimReport, error) {
	var rep catalogs.ReclaimReport
	tbl, err := p.load(ctx, t)
	if err != nil {
		return rep, err
	}
	root, ok := canonPath(tbl.Location())
	if !ok {
		return rep, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim: location %q is not a path or URI", t, tbl.Location())
	}
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		return rep, mapErr(err, fmt.Sprintf("table %s: reclaim: storage", t))
	}
	lister, ok := fsys.(iceio.ListableIO)
	if !ok {
		return rep, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim: storage cannot list files", t)
	}
	refs := newRefs()
	if err := refs.addTable(fsys, tbl); err != nil {
		return rep, mapErr(err, fmt.Sprintf("table %s: reclaim: read metadata", t))
	}
	if err := refs.addHeld(ctx, t, opts.Held); err != nil {
		return rep, err
	}
	found, young, err := p.unreferenced(ctx, t, tbl, lister, root, refs, cutoff)
	rep.Young = young
	if err != nil || len(found) == 0 {
		return rep, err
	}
	if p.beforeRecheck != nil {
		p.beforeRecheck(t)
	}
	// A commit may have landed since the metadata was read: read it again
	// and keep whatever it references.
	again, err := p.load(ctx, t)
	if err != nil {
		return rep, err
	}
	if again.Metadata().TableUUID() != tbl.Metadata().TableUUID() {
		return rep, nil // dropped and created again meanwhile: next run
	}
	if again.MetadataLocation() != tbl.MetadataLocation() {
		if err := refs.addTable(fsys, again); err != nil {
			return rep, mapErr(err, fmt.Sprintf("table %s: reclaim: read metadata", t))
		}
	}
	var errs []error
	for _, o := range found {
		if refs.has(o.path) {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if !opts.DryRun {
			_, err := catalogs.Guard(ctx, p.storage, true, func(context.Context) (struct{}, error) {
				return struct{}{}, removeFile(fsys, o.path)
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", o.path, err))
				continue
			}
		} else {
			rep.Orphans = append(rep.Orphans, o.path)
		}
		switch o.kind {
		case kindData:
			rep.DataFiles++
		case kindManifest:
			rep.ManifestFiles++
		case kindMetadata:
			rep.MetadataFiles++
		}
		rep.Bytes += o.size
	}
	rep.LogTable(ctx, p.log, t, opts.DryRun, "metadata")
	if len(errs) > 0 {
		return rep, catalogs.Wrap(catalogs.ErrUnavailable, errors.Join(errs...), fmt.Sprintf("table %s: reclaim: delete orphan files", t))
	}
	return rep, nil
}

// unreferenced lists the candidate files of the table's metadata and data
// directories that refs does not reach, older than cutoff; young counts
// the unreferenced ones kept for their age. A directory outside the
// table's location (write.data.path elsewhere) is not walked.
func (p *Provider) unreferenced(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, lister iceio.ListableIO,
	root string, refs *refs, cutoff time.Time) (found []orphan, young int, err error) {
	seen := map[string]bool{}
	for _, dir := range []struct {
		path string
		meta bool
	}{{metadataRoot(tbl), true}, {dataRoot(tbl), false}} {
		if d, ok := canonPath(dir.path); !ok || !(d == root || within(d, root)) {
			p.log.WarnContext(ctx, "reclaim: directory outside the table's location not examined", "table", t.String(), "dir", dir.path)
			continue
		}
		werr := lister.WalkDir(dir.path, func(name string, d fs.DirEntry, err error) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err != nil || d == nil || d.IsDir() || d.Type()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0 {
				return nil // an unreadable entry is kept; a partial listing deletes less, never more
			}
			c, ok := canonPath(name)
			if !ok || seen[c] || !within(c, root) {
				return nil
			}
			seen[c] = true
			kind, ok := candidate(path.Base(c), dir.meta)
			if !ok || refs.has(name) {
				return nil
			}
			info, err := d.Info()
			if err != nil || info.ModTime().IsZero() {
				return nil
			}
			if !info.ModTime().Before(cutoff) || refs.held(name) {
				young++
				return nil
			}
			found = append(found, orphan{path: name, kind: kind, size: info.Size()})
			return nil
		})
		if werr != nil {
			return nil, young, catalogs.Wrap(catalogs.ErrUnavailable, werr, fmt.Sprintf("table %s: reclaim: list %s", t, dir.path))
		}
	}
	return found, young, nil
}

// candidate tells whether a file name is one this backend's layout
// produces in the metadata (meta) or data directory, and of which kind.
func candidate(name string, meta bool) (fileKind, bool) {
	switch {
	case strings.HasSuffix(name, ".metadata.json"), strings.HasSuffix(name, ".metadata.json.gz"):
		return kindMetadata, true
	case meta:
		return kindManifest, strings.HasSuffix(name, ".avro")
	}
	for _, ext := range []string{".parquet", ".orc", ".avro", ".puffin"} {
		if strings.HasSuffix(name, ext) {
			return kindData, true
		}
	}
	return kindData, false
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
		if s.ManifestList != "" {
			if r.lists[s.ManifestList] {
				continue
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
				entries, err := mf.FetchEntries(fsys, false)
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
