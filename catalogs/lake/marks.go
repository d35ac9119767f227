package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
)

// A staged create (catalogs.StagedCreator) writes its files where its
// table will be before any catalog entry names them: killed before its
// commit, it leaves files that belong to no table, which the reclaim of
// listed tables never visits. Each create stream therefore leaves a mark,
// one small object under MarksDir named after its table and a random id,
// written before its first data file and refreshed while the create lives
// (as the stream writes, and by the transaction that holds its receipts:
// catalogs.CreateKeeper). The marks say which directories to look at and
// hold the lease: ReclaimCreates deletes a directory's staged files only
// when every mark of its name is older than the reclaim's min age and no
// table took the name. A directory without a mark is never touched (it is
// not this gateway's), and deleting a mark can only keep files, never
// lose them.

// MarksDir is the directory of the marks, under the warehouse root (its
// leading dot keeps it out of every listing of namespaces and tables).
const MarksDir = ".flightgw-creates"

// DefaultKeepEvery is how often a live create refreshes its mark: the
// reclaim's min age must be far above it (it is hours in production).
const DefaultKeepEvery = catalogs.CreateKeepEvery

// MarkStore is what marks need of a store; a Store has it.
type MarkStore interface {
	Put(ctx context.Context, path string, data []byte) error
	Remove(ctx context.Context, path string) error
	Walk(ctx context.Context, dir string, fn func(rel string, size int64, mod time.Time) error) error
}

// Marks are a catalog's create marks: Root is MarksDir under the
// warehouse, as Store spells paths.
type Marks struct {
	Store MarkStore
	Root  string
	// Local, when set, gives the local path of a store path (Store.Local):
	// the directories of a name's marks are removed once empty.
	Local func(path string) (string, bool)
}

// NewMarkID is the id of a new create stream's mark.
func NewMarkID() string { return uuid.NewString() }

// path is the mark id of table t's create: Root/<namespace>/<table>/<id>.
// Names are validated (TableIdent.Validate) and ids are this gateway's.
func (m Marks) path(t catalogs.TableIdent, id string) (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	if len(t.Namespace) != 1 {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: create marks take one namespace level", t)
	}
	if _, err := uuid.Parse(id); err != nil {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: create mark %q is not a mark id", t, id)
	}
	return m.Root + "/" + t.Namespace[0] + "/" + t.Name + "/" + id, nil
}

// Put writes or refreshes (a new modification time) the mark id of a
// create of t.
func (m Marks) Put(ctx context.Context, t catalogs.TableIdent, id string) error {
	p, err := m.path(t, id)
	if err != nil {
		return err
	}
	if err := m.Store.Put(ctx, p, []byte(t.String()+"\n")); err != nil {
		return MapErr(err, fmt.Sprintf("table %s: write create mark", t))
	}
	return nil
}

// Keep refreshes the marks ids of creates of t.
func (m Marks) Keep(ctx context.Context, t catalogs.TableIdent, ids []string) error {
	for _, id := range ids {
		if err := m.Put(ctx, t, id); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the marks ids of creates of t (a commit landed, or its
// files were discarded); a missing mark is no error, and a failure only
// leaves a mark that ages out.
func (m Marks) Remove(ctx context.Context, t catalogs.TableIdent, ids ...string) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if p, err := m.path(t, id); err == nil {
			_ = m.Store.Remove(ctx, p)
		}
	}
	m.tidy(t)
}

// tidy removes, on local storage, the directories of t's marks (and of
// its namespace's) when no mark is left in them.
func (m Marks) tidy(t catalogs.TableIdent) {
	if m.Local == nil || len(t.Namespace) != 1 {
		return
	}
	for _, d := range []string{m.Root + "/" + t.Namespace[0] + "/" + t.Name, m.Root + "/" + t.Namespace[0]} {
		if l, ok := m.Local(d); ok {
			_ = os.Remove(l) // fails while not empty
		}
	}
}

// Keeper refreshes one stream's mark as it writes, at most every Every
// (DefaultKeepEvery when zero).
type Keeper struct {
	Marks Marks
	Table catalogs.TableIdent
	ID    string
	Every time.Duration
	last  time.Time
}

// Start writes the mark: call it before the stream's first file.
func (k *Keeper) Start(ctx context.Context) error {
	if err := k.Marks.Put(ctx, k.Table, k.ID); err != nil {
		return err
	}
	k.last = time.Now()
	return nil
}

// Keep refreshes the mark when it is due.
func (k *Keeper) Keep(ctx context.Context) error {
	every := k.Every
	if every <= 0 {
		every = DefaultKeepEvery
	}
	if time.Since(k.last) < every {
		return nil
	}
	return k.Start(ctx)
}

// markSet is the marks of one table name.
type markSet struct {
	t     catalogs.TableIdent
	marks []Candidate
}

// list reads every mark, grouped by table; an entry that is no mark of a
// valid name is skipped.
func (m Marks) list(ctx context.Context, catalog string) ([]markSet, error) {
	var out []markSet
	at := map[string]int{}
	err := m.Store.Walk(ctx, m.Root, func(rel string, size int64, mod time.Time) error {
		parts := strings.Split(rel, "/")
		if len(parts) != 3 {
			return nil
		}
		t := catalogs.TableIdent{Catalog: catalog, Namespace: []string{parts[0]}, Name: parts[1]}
		if _, err := m.path(t, parts[2]); err != nil {
			return nil
		}
		i, ok := at[t.Key()]
		if !ok {
			i = len(out)
			at[t.Key()] = i
			out = append(out, markSet{t: t})
		}
		out[i].marks = append(out[i].marks, Candidate{Path: m.Root + "/" + rel, Ref: parts[2], Kind: KindMetadata, Size: size, Mod: mod})
		return nil
	})
	return out, err
}

// CreateDir is a table format's side of the reclaim of a staged create's
// directory: whether a table took the name, and the files a staged create
// writes there.
type CreateDir interface {
	// IsTable reports whether a table of the catalog now has the name or
	// its directory (then the table's own reclaim judges the files).
	IsTable(ctx context.Context) (bool, error)
	// Candidates calls fn for every file a staged create writes under the
	// directory.
	Candidates(ctx context.Context, fn func(Candidate) error) error
	// Held tells whether a live unit of work of this process holds ref.
	Held(ref string) bool
	// Delete deletes a candidate's path.
	Delete(ctx context.Context, path string) error
	// Tidy removes the directories the deletion left empty (local
	// storage; an object store has none).
	Tidy(ctx context.Context)
}

// open returning a nil CreateDir and no error skips the name.

// ReclaimCreates deletes the files of staged creates that no table took:
// for every table name with marks, all older than cutoff, whose directory
// is no table's, the files (open returns the directory's side) older than
// cutoff and held by no live unit of work, and then the marks. The marks
// and whether a table took the name are read again right before deleting:
// a create that began meanwhile (a young mark) or landed keeps everything.
// A table's stale marks (a killed create whose name was taken since) are
// deleted. Each directory cleaned counts in rep.Creates.
func (r Reclaimer) ReclaimCreates(ctx context.Context, name string, m Marks, opts catalogs.ReclaimOptions, cutoff time.Time,
	open func(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (CreateDir, error)) (catalogs.ReclaimReport, error) {
	var rep catalogs.ReclaimReport
	sets, err := m.list(ctx, name)
	if err != nil {
		return rep, MapErr(err, fmt.Sprintf("catalog %q: reclaim: list create marks", name))
	}
	var errs []error
	for _, s := range sets {
		if ctx.Err() != nil {
			break
		}
		d, err := open(ctx, s.t, opts)
		if err == nil && d == nil {
			continue // nothing to judge (the namespace is gone)
		}
		if err == nil {
			err = r.reclaimCreate(ctx, s, m, d, opts, cutoff, &rep)
		}
		if err != nil {
			rep.TablesFailed++
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

// young tells whether a mark of s is not older than cutoff.
func (s markSet) young(cutoff time.Time) bool {
	for _, c := range s.marks {
		if c.Mod.IsZero() || !c.Mod.Before(cutoff) {
			return true
		}
	}
	return false
}

func (r Reclaimer) reclaimCreate(ctx context.Context, s markSet, m Marks, d CreateDir, opts catalogs.ReclaimOptions, cutoff time.Time, rep *catalogs.ReclaimReport) error {
	t := s.t
	if s.young(cutoff) {
		rep.Young += len(s.marks)
		return nil // a live create
	}
	isTable, err := d.IsTable(ctx)
	if err != nil {
		return err
	}
	if isTable {
		// A killed create's marks, on a name another create took since:
		// the table's reclaim judges its files.
		return r.dropMarks(ctx, m, t, s.marks, opts, rep)
	}
	var found []Candidate
	kept := 0
	werr := d.Candidates(ctx, func(c Candidate) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.Mod.IsZero() || !c.Mod.Before(cutoff) || d.Held(c.Ref) {
			kept++
			return nil
		}
		found = append(found, c)
		return nil
	})
	if werr != nil {
		return MapErr(werr, fmt.Sprintf("table %s: reclaim staged create: list files", t))
	}
	rep.Young += kept
	if r.BeforeRecheck != nil {
		r.BeforeRecheck(t)
	}
	// Again, right before deleting: a create that began (its mark is
	// young) or landed (the name is a table) since keeps everything.
	again, err := m.list(ctx, t.Catalog)
	if err != nil {
		return MapErr(err, fmt.Sprintf("table %s: reclaim staged create: list create marks", t))
	}
	for _, a := range again {
		if a.t.Key() == t.Key() && a.young(cutoff) {
			return nil
		}
	}
	if isTable, err = d.IsTable(ctx); err != nil || isTable {
		return err
	}
	var errs []error
	var one catalogs.ReclaimReport
	for _, c := range found {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if opts.DryRun {
			one.Orphans = append(one.Orphans, c.Path)
		} else if err := d.Delete(ctx, c.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Path, err))
			continue
		}
		count(&one, c)
	}
	if len(found) > 0 {
		one.Creates = 1
	}
	// The marks go last, and only when nothing is left to protect: a
	// file kept now (young, held) would be no one's once its mark is
	// gone.
	if len(errs) == 0 && kept == 0 {
		if err := r.dropMarks(ctx, m, t, s.marks, opts, &one); err != nil {
			errs = append(errs, err)
		}
		if !opts.DryRun {
			d.Tidy(ctx)
		}
	}
	if r.Log != nil && one.Files() > 0 {
		one.LogTable(ctx, r.Log, t, opts.DryRun, "marks")
	}
	rep.Add(one)
	if len(errs) > 0 {
		return catalogs.Wrap(catalogs.ErrUnavailable, errors.Join(errs...), fmt.Sprintf("table %s: reclaim staged create: delete files", t))
	}
	return nil
}

// dropMarks deletes (or in a dry run, reports) the marks.
func (r Reclaimer) dropMarks(ctx context.Context, m Marks, t catalogs.TableIdent, marks []Candidate, opts catalogs.ReclaimOptions, rep *catalogs.ReclaimReport) error {
	for _, c := range marks {
		if opts.DryRun {
			rep.Orphans = append(rep.Orphans, c.Path)
		} else if err := m.Store.Remove(ctx, c.Path); err != nil {
			return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: reclaim: delete create mark %s", t, c.Path))
		}
		count(rep, c)
	}
	if !opts.DryRun {
		m.tidy(t)
	}
	return nil
}

// RemoveEmptyDirs removes, deepest first, the empty directories under the
// local directory dir and dir itself when it is left empty; a directory
// that is not empty stays.
func RemoveEmptyDirs(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs) // WalkDir lists a directory before its children
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// StoreCreateDir is the CreateDir of a staged create whose table is a
// directory of a Store (Delta, Paimon): what differs by format is the
// entry whose presence makes the directory a table, and which of its
// files a create writes.
type StoreCreateDir struct {
	FS  Store
	Dir string
	// TableEntry, relative to Dir, exists once a table does (as the
	// format's table listing counts one).
	TableEntry string
	// Candidate tells whether the file at rel (relative to Dir) is one a
	// create writes, and its kind.
	Candidate func(rel string) (FileKind, bool)
	// HeldRef tells whether a live unit of work of this process holds
	// the file at rel.
	HeldRef func(rel string) bool
}

func (d *StoreCreateDir) IsTable(ctx context.Context) (bool, error) {
	return d.FS.Exists(ctx, d.Dir+"/"+d.TableEntry)
}

func (d *StoreCreateDir) Candidates(ctx context.Context, fn func(Candidate) error) error {
	return d.FS.Walk(ctx, d.Dir, func(rel string, size int64, mod time.Time) error {
		kind, ok := d.Candidate(rel)
		if !ok {
			return nil
		}
		return fn(Candidate{Path: d.Dir + "/" + rel, Ref: rel, Kind: kind, Size: size, Mod: mod})
	})
}

func (d *StoreCreateDir) Held(ref string) bool { return d.HeldRef(ref) }

func (d *StoreCreateDir) Delete(ctx context.Context, p string) error { return d.FS.Remove(ctx, p) }

func (d *StoreCreateDir) Tidy(context.Context) {
	if l, ok := d.FS.Local(d.Dir); ok {
		RemoveEmptyDirs(l)
	}
}

// ReclaimProvider is the whole reclaim of a backend whose every table is
// one Table: every table of l that open reaches (All), then the staged
// creates of catalog name that no table took (ReclaimCreates with m and
// createDir). A non-positive opts.MinAge is refused, as All refuses it.
func (r Reclaimer) ReclaimProvider(ctx context.Context, name string, l catalogs.Lister, opts catalogs.ReclaimOptions,
	open func(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (Table, error),
	m Marks, createDir func(ctx context.Context, t catalogs.TableIdent, opts catalogs.ReclaimOptions) (CreateDir, error)) (catalogs.ReclaimReport, error) {
	var tables []catalogs.TableIdent
	if opts.MinAge > 0 {
		var err error
		if tables, err = catalogs.AllTables(ctx, l); err != nil {
			return catalogs.ReclaimReport{}, err
		}
	}
	rep, err := All(ctx, name, opts, tables, func(ctx context.Context, t catalogs.TableIdent, cutoff time.Time) (catalogs.ReclaimReport, error) {
		tbl, err := open(ctx, t, opts)
		if err != nil {
			return catalogs.ReclaimReport{}, err
		}
		return r.Reclaim(ctx, t, tbl, opts, cutoff)
	})
	if opts.MinAge <= 0 {
		return rep, err
	}
	rc, cerr := r.ReclaimCreates(ctx, name, m, opts, time.Now().Add(-opts.MinAge), createDir)
	rep.Add(rc)
	return rep, errors.Join(err, cerr)
}
