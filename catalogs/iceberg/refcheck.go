package iceberg

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"sync"

	ice "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/refindex"
)

// refIndexBytes bounds the memory of a provider's reference indexes (about
// 130 bytes a data file): past it the least recently checked tables are
// dropped, and their next check reads their whole history again.
const refIndexBytes = 64 << 20

// refCache holds the reference index of each table the provider checked.
// Its zero value is ready: the index is made on first use.
type refCache struct {
	once sync.Once
	c    *refindex.Cache[*refindex.Index]
}

func (r *refCache) get() *refindex.Cache[*refindex.Index] {
	r.once.Do(func() { r.c = refindex.NewCache(refIndexBytes, refindex.NewIndex) })
	return r.c
}

// CheckUnreferenced refuses receipts any of whose files a snapshot of the
// table references, current or older, by path or by name as the
// reclaimer's walk of the metadata does: deleting such a file would break
// the table for every reader, committing it again would add its rows
// twice. The table's metadata is read fresh each time; manifest lists and
// manifests, immutable, are read once and kept in the table's reference
// index (package refindex), so a check reads only what commits since the
// last one wrote.
func (p *Provider) CheckUnreferenced(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return err
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return err
	}
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		return err
	}
	direct := newRefs()
	meta := tbl.Metadata()
	direct.add(tbl.MetadataLocation())
	for e := range meta.PreviousFiles() {
		direct.add(e.MetadataFile)
	}
	for s := range meta.Statistics() {
		direct.add(s.StatisticsPath)
	}
	for s := range meta.PartitionStatistics() {
		direct.add(s.StatisticsPath)
	}
	roots := snapshotRoots(fsys, meta)
	return p.refs.get().With(t.String(), func(x *refindex.Index) error {
		if err := x.Update(ctx, roots); err != nil {
			return err
		}
		for _, rm := range rms {
			for _, f := range rm.Files {
				if direct.has(f.Path) || indexHas(x, f.Path) {
					return catalogs.Errorf(catalogs.ErrFailedPrecondition,
						"table %s: file %s is referenced by a snapshot of the table (it was committed)", t, f.Path)
				}
			}
		}
		return nil
	})
}

// leafKeys are the index keys of a location: its canonical path and its
// base name, as refs.add records them.
func leafKeys(loc string) []string {
	if loc == "" {
		return nil
	}
	out := []string{"n:" + path.Base(loc)}
	if c, ok := canonPath(loc); ok {
		out = append(out, "p:"+c)
	}
	return out
}

// indexHas is refs.has against an index.
func indexHas(x *refindex.Index, loc string) bool {
	c, ok := canonPath(loc)
	return !ok || x.Has("p:"+c) || x.Has("n:"+path.Base(loc))
}

// snapshotRoots are the index roots of every snapshot of meta: a root per
// manifest list (keyed by its location, unique and immutable), whose node
// holds the list's location and whose children are the manifests, each
// holding its own location and its entries' data and delete files,
// deleted entries included. A snapshot without a list (v1 metadata naming its
// manifests inline) is keyed by the table's UUID and its snapshot id.
func snapshotRoots(fsys iceio.IO, meta table.Metadata) []refindex.Child {
	snaps := meta.Snapshots()
	roots := make([]refindex.Child, 0, len(snaps))
	for _, s := range snaps {
		key := "list:" + s.ManifestList
		if s.ManifestList == "" {
			key = "v1:" + meta.TableUUID().String() + ":" + strconv.FormatInt(s.SnapshotID, 10)
		}
		roots = append(roots, refindex.Child{Key: key, Load: func(context.Context) (refindex.Node, error) {
			return loadSnapshot(fsys, s)
		}})
	}
	return roots
}

func loadSnapshot(fsys iceio.IO, s table.Snapshot) (refindex.Node, error) {
	var n refindex.Node
	n.Files = append(n.Files, leafKeys(s.ManifestList)...)
	for _, m := range s.ManifestLocations {
		n.Files = append(n.Files, leafKeys(m)...)
	}
	err := protect(catalogs.ErrUnavailable, "read manifests", func() error {
		mfs, err := s.Manifests(fsys)
		if err != nil {
			return fmt.Errorf("snapshot %d: manifest list %s: %w", s.SnapshotID, s.ManifestList, err)
		}
		for _, mf := range mfs {
			n.Children = append(n.Children, refindex.Child{Key: "manifest:" + mf.FilePath(), Load: func(context.Context) (refindex.Node, error) {
				return loadManifest(fsys, s.SnapshotID, mf)
			}})
		}
		return nil
	})
	return n, err
}

func loadManifest(fsys iceio.IO, snapshotID int64, mf ice.ManifestFile) (refindex.Node, error) {
	n := refindex.Node{Files: leafKeys(mf.FilePath())}
	err := protect(catalogs.ErrUnavailable, "read manifests", func() error {
		entries, err := mf.FetchEntries(fsys, false)
		if err != nil {
			return fmt.Errorf("snapshot %d: manifest %s: %w", snapshotID, mf.FilePath(), err)
		}
		for _, e := range entries {
			if df := e.DataFile(); df != nil {
				n.Files = append(n.Files, leafKeys(df.FilePath())...)
			}
		}
		return nil
	})
	return n, err
}
