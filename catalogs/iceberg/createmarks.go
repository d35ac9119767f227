package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// A staged create's stream leaves a mark under the warehouse
// (lake.Marks), so that the files of a create killed before its commit,
// which no catalog row names, are found and reclaimed.

// marks are the catalog's create marks, under the warehouse; ok is false
// without a warehouse (a REST catalog, whose creates are not staged).
func (p *Provider) marks(ctx context.Context) (lake.Marks, bool, error) {
	if p.cfg.warehouse == "" {
		return lake.Marks{}, false, nil
	}
	fsys, err := iceio.LoadFS(ctx, p.cfg.passthrough, p.cfg.warehouse)
	if err != nil {
		return lake.Marks{}, false, mapErr(err, fmt.Sprintf("catalog %q: storage for create marks", p.name))
	}
	w, okW := fsys.(iceio.WriteFileIO)
	l, okL := fsys.(iceio.ListableIO)
	if !okW || !okL {
		return lake.Marks{}, false, nil
	}
	st := markStore{p: p, w: w, l: l}
	local := func(loc string) (string, bool) {
		c, ok := canonPath(loc)
		return c, ok && strings.HasPrefix(c, "/")
	}
	return lake.Marks{Store: st, Root: strings.TrimSuffix(p.cfg.warehouse, "/") + "/" + lake.MarksDir, Local: local}, true, nil
}

// markStore is lake.MarkStore over the warehouse's iceberg-go IO, through
// the storage breaker.
type markStore struct {
	p *Provider
	w iceio.WriteFileIO
	l iceio.ListableIO
}

func (m markStore) Put(ctx context.Context, path string, data []byte) error {
	_, err := catalogs.Guard(ctx, m.p.storage, true, func(context.Context) (struct{}, error) {
		return struct{}{}, m.w.WriteFile(path, data)
	})
	return err
}

func (m markStore) Remove(ctx context.Context, path string) error {
	_, err := catalogs.Guard(ctx, m.p.storage, true, func(context.Context) (struct{}, error) {
		return struct{}{}, removeFile(m.w, path)
	})
	return err
}

// Walk lists the files under dir, with their paths relative to it; a
// missing dir lists nothing.
func (m markStore) Walk(ctx context.Context, dir string, fn func(rel string, size int64, mod time.Time) error) error {
	root, ok := canonPath(dir)
	if !ok {
		return fmt.Errorf("create marks: %q is not a path or URI", dir)
	}
	return m.l.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil || !plainFile(d) {
			return nil // a partial listing deletes less, never more
		}
		c, ok := canonPath(name)
		if !ok || !within(c, root) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		return fn(strings.TrimPrefix(c, root+"/"), info.Size(), info.ModTime())
	})
}

// dropMarks removes the marks of the receipts (best effort: a mark left
// ages out).
func (p *Provider) dropMarks(ctx context.Context, t catalogs.TableIdent, rms []receiptMeta) {
	ids := receiptMarks(rms)
	if len(ids) == 0 {
		return
	}
	if m, ok, err := p.marks(ctx); err == nil && ok {
		m.Remove(ctx, t, ids...)
	}
}

// receiptMarks are the distinct create marks of the receipts.
func receiptMarks(rms []receiptMeta) []string {
	seen := map[string]bool{}
	var out []string
	for _, rm := range rms {
		if rm.Mark != "" && !seen[rm.Mark] {
			seen[rm.Mark] = true
			out = append(out, rm.Mark)
		}
	}
	return out
}

var _ catalogs.CreateKeeper = (*Provider)(nil)

// KeepCreate implements catalogs.CreateKeeper: the receipts' create marks
// are written again, younger.
func (p *Provider) KeepCreate(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return err
	}
	m, ok, err := p.marks(ctx)
	if err != nil || !ok {
		return err
	}
	return m.Keep(ctx, t, receiptMarks(rms))
}

// reclaimCreates reclaims the staged creates that no table took
// (lake.Reclaimer.ReclaimCreates); locs are the locations of the
// catalog's tables, canonical.
func (p *Provider) reclaimCreates(ctx context.Context, r lake.Reclaimer, opts catalogs.ReclaimOptions, locs []string) (catalogs.ReclaimReport, error) {
	m, ok, err := p.marks(ctx)
	if err != nil || !ok {
		return catalogs.ReclaimReport{}, err
	}
	return r.ReclaimCreates(ctx, p.name, m, opts, time.Now().Add(-opts.MinAge),
		func(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (lake.CreateDir, error) {
			return p.createDir(ctx, t, opts, locs)
		})
}

// createDir is the location a staged create of t wrote under
// (lake.CreateDir), as newLocation gives it now: its data and metadata
// directories, as the default layout has them. It is a table's when the
// catalog has a table of the name, or one whose location overlaps it.
type createDir struct {
	p    *Provider
	t    catalogs.TableIdent
	loc  string // as newLocation spells it
	root string // canonical
	locs []string
	fsys iceio.IO
	refs *refs
}

func (p *Provider) createDir(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions, locs []string) (lake.CreateDir, error) {
	loc, err := p.newLocation(ctx, t)
	if errors.Is(err, catalogs.ErrNotFound) {
		return nil, nil // the namespace is gone: nothing is deleted
	}
	if err != nil {
		return nil, err
	}
	if _, err := p.checkLocation(t, loc); err != nil {
		return nil, err
	}
	root, ok := canonPath(loc)
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim: location %q is not a path or URI", t, loc)
	}
	fsys, err := iceio.LoadFS(ctx, p.cfg.passthrough, loc)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s: reclaim: storage", t))
	}
	d := &createDir{p: p, t: t, loc: strings.TrimSuffix(loc, "/"), root: root, locs: locs, fsys: fsys, refs: newRefs()}
	if err := d.refs.addHeld(ctx, t, opts.Held); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *createDir) IsTable(ctx context.Context) (bool, error) {
	switch _, err := d.p.load(ctx, d.t); {
	case err == nil:
		return true, nil
	case !errors.Is(err, catalogs.ErrNotFound):
		return false, err
	}
	for _, l := range d.locs {
		if l != "" && (l == d.root || within(l, d.root) || within(d.root, l)) {
			return true, nil
		}
	}
	return false, nil
}

func (d *createDir) Candidates(ctx context.Context, fn func(lake.Candidate) error) error {
	lister, ok := d.fsys.(iceio.ListableIO)
	if !ok {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: reclaim: storage cannot list files", d.t)
	}
	for _, dir := range []struct {
		path string
		meta bool
	}{{d.loc + "/metadata", true}, {d.loc + "/data", false}} {
		werr := lister.WalkDir(dir.path, func(name string, e fs.DirEntry, err error) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err != nil || !plainFile(e) {
				return nil
			}
			c, ok := canonPath(name)
			if !ok || !within(c, d.root) {
				return nil
			}
			kind, ok := candidate(c[strings.LastIndex(c, "/")+1:], dir.meta)
			if !ok {
				return nil
			}
			info, err := e.Info()
			if err != nil {
				return nil
			}
			return fn(lake.Candidate{Path: name, Ref: name, Kind: kind, Size: info.Size(), Mod: info.ModTime()})
		})
		if werr != nil {
			return catalogs.Wrap(catalogs.ErrUnavailable, werr, fmt.Sprintf("table %s: reclaim: list %s", d.t, dir.path))
		}
	}
	return nil
}

func (d *createDir) Held(loc string) bool { return d.refs.held(loc) }

func (d *createDir) Delete(ctx context.Context, loc string) error {
	_, err := catalogs.Guard(ctx, d.p.storage, true, func(context.Context) (struct{}, error) {
		return struct{}{}, removeFile(d.fsys, loc)
	})
	return err
}

// Tidy removes the empty directories of a local location.
func (d *createDir) Tidy(context.Context) {
	if strings.HasPrefix(d.root, "/") {
		lake.RemoveEmptyDirs(d.root)
	}
}

// plainFile tells whether a walked entry is a file to judge: not a
// directory, link or special file (an object store's objects are
// "irregular" to io/fs, and count).
func plainFile(d fs.DirEntry) bool {
	return d != nil && !d.IsDir() && d.Type()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) == 0
}
