package paimon

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/refindex"
)

// refIndexBytes bounds the memory of a provider's reference indexes (about
// 130 bytes a data file): past it the least recently checked tables are
// dropped, and their next check reads their whole history again.
const refIndexBytes = 64 << 20

// snapOverhead approximates the bytes a remembered snapshot costs.
const snapOverhead = 256

// refCache holds the reference state of each table (by directory) the
// provider checked. Its zero value is ready.
type refCache struct {
	once sync.Once
	c    *refindex.Cache[*refState]
}

func (r *refCache) get() *refindex.Cache[*refState] {
	r.once.Do(func() {
		r.c = refindex.NewCache(refIndexBytes, func() *refState {
			return &refState{idx: refindex.NewIndex(), snaps: map[int64]snapRef{}}
		})
	})
	return r.c
}

// refState is what CheckUnreferenced keeps of a table between checks: the
// reference index of its manifests and the snapshots it read.
type refState struct {
	idx   *refindex.Index
	snaps map[int64]snapRef
}

// Bytes is the state's approximate size, for the cache's budget.
func (s *refState) Bytes() int64 {
	n := s.idx.Bytes()
	for _, r := range s.snaps {
		n += snapOverhead + int64(len(r.base)+len(r.delta)+len(r.user))
	}
	return n
}

// snapRef is what the check needs of a snapshot, and what tells one
// written again under the same id (a rollback, a recreated table) from
// the one read before: manifest list names carry a UUID.
type snapRef struct {
	base, delta, user string
	ident, millis     int64
}

func refOf(s *snapshot) snapRef {
	return snapRef{base: s.BaseManifestList, delta: s.DeltaManifestList, user: s.CommitUser, ident: s.CommitIdentifier, millis: s.TimeMillis}
}

// indexed answers CheckUnreferenced from the table's reference state:
// which of files (relative to the table directory) a manifest of a
// present or tagged snapshot names, as referenced does by a full walk.
// Snapshot files are read only for ids not read before; one remembered
// snapshot is read again to tell that the remembered ones still stand
// (Paimon reuses ids only after a rollback deleted the newest
// snapshots, or when the table is recreated); tags are read every time.
func (p *Provider) indexed(ctx context.Context, st *tableState, files []string) (string, error) {
	hit := ""
	err := p.refs.get().With(st.dir, func(rs *refState) error {
		roots, err := p.refRoots(ctx, st, rs)
		if err != nil {
			return err
		}
		if err := rs.idx.Update(ctx, roots); err != nil {
			return err
		}
		for _, f := range files {
			if rs.idx.Has(f) {
				hit = f
				return nil
			}
		}
		return nil
	})
	return hit, err
}

// refRoots brings rs.snaps up to the table's present snapshots and returns
// the manifest lists of those and of the tags.
func (p *Provider) refRoots(ctx context.Context, st *tableState, rs *refState) ([]refindex.Child, error) {
	var lists []string
	if st.snap == nil {
		clear(rs.snaps)
	} else if err := p.refSnapshots(ctx, st, rs); err != nil {
		return nil, err
	}
	for _, s := range rs.snaps {
		lists = append(lists, s.base, s.delta)
	}
	if st.snap != nil {
		tags, err := p.readTags(ctx, st)
		if err != nil {
			return nil, err
		}
		for _, s := range tags {
			lists = append(lists, s.BaseManifestList, s.DeltaManifestList)
		}
	}
	roots := make([]refindex.Child, 0, len(lists))
	for _, l := range lists {
		if l == "" {
			continue
		}
		roots = append(roots, refindex.Child{Key: "list:" + l, Load: func(ctx context.Context) (refindex.Node, error) {
			return p.loadList(ctx, st, l)
		}})
	}
	return roots, nil
}

// refSnapshots makes rs.snaps the snapshots from the earliest to st.snap.
func (p *Provider) refSnapshots(ctx context.Context, st *tableState, rs *refState) error {
	latest := st.snap.ID
	earliest := p.earliestID(ctx, st.dir)
	if old, ok := rs.snaps[latest]; ok {
		if old != refOf(st.snap) {
			clear(rs.snaps)
		}
	} else if c := maxBelow(rs.snaps, latest); c > 0 && c >= earliest {
		s, err := p.readSnapshot(ctx, st.ident, st.dir, c)
		switch {
		case lake.IsNotExist(err):
			clear(rs.snaps)
		case err != nil:
			return lake.MapErr(err, fmt.Sprintf("table %s: snapshot-%d", st.ident, c))
		case refOf(s) != rs.snaps[c]:
			clear(rs.snaps)
		}
	}
	for id := range rs.snaps {
		if id < earliest || id > latest {
			delete(rs.snaps, id)
		}
	}
	rs.snaps[latest] = refOf(st.snap)
	for id := earliest; id > 0 && id < latest; id++ {
		if _, ok := rs.snaps[id]; ok {
			continue
		}
		s, err := p.readSnapshot(ctx, st.ident, st.dir, id)
		if lake.IsNotExist(err) {
			continue // expired meanwhile
		}
		if err != nil {
			return lake.MapErr(err, fmt.Sprintf("table %s: snapshot-%d", st.ident, id))
		}
		rs.snaps[id] = refOf(s)
	}
	return nil
}

// maxBelow is the highest id of snaps below limit, 0 when none is.
func maxBelow(snaps map[int64]snapRef, limit int64) int64 {
	best := int64(0)
	for id := range snaps {
		if id < limit && id > best {
			best = id
		}
	}
	return best
}

// loadList reads a manifest list into an index node whose children are
// its manifests.
func (p *Provider) loadList(ctx context.Context, st *tableState, name string) (refindex.Node, error) {
	ms, err := p.readManifestList(ctx, st.ident, st.dir, name)
	if err != nil {
		return refindex.Node{}, err
	}
	n := refindex.Node{Children: make([]refindex.Child, len(ms))}
	for i, m := range ms {
		n.Children[i] = refindex.Child{Key: "manifest:" + m.FileName, Load: func(ctx context.Context) (refindex.Node, error) {
			return p.loadManifest(ctx, st, m.FileName)
		}}
	}
	return n, nil
}

// loadManifest reads a manifest into an index node holding the paths of
// its entries' data files, added or deleted.
func (p *Provider) loadManifest(ctx context.Context, st *tableState, name string) (refindex.Node, error) {
	es, err := p.readManifest(ctx, st.ident, st.dir, name)
	if err != nil {
		return refindex.Node{}, err
	}
	n := refindex.Node{Files: make([]string, len(es))}
	for i, e := range es {
		n.Files[i] = st.partitionDir(e) + "bucket-" + strconv.Itoa(int(e.bucket)) + "/" + e.file.FileName
	}
	return n, nil
}
