package lake_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// localCreate is a staged create's directory on a local store: every
// file under it is a candidate; table says whether a table took it.
type localCreate struct {
	st    lake.Local
	dir   string
	table func() bool
}

func (d localCreate) IsTable(context.Context) (bool, error) { return d.table(), nil }

func (d localCreate) Candidates(ctx context.Context, fn func(lake.Candidate) error) error {
	return d.st.Walk(ctx, d.dir, func(rel string, size int64, mod time.Time) error {
		return fn(lake.Candidate{Path: d.dir + "/" + rel, Ref: rel, Kind: lake.KindData, Size: size, Mod: mod})
	})
}

func (localCreate) Held(string) bool { return false }

func (d localCreate) Delete(ctx context.Context, p string) error { return d.st.Remove(ctx, p) }

func (d localCreate) Tidy(context.Context) { lake.RemoveEmptyDirs(filepath.Join(d.st.Root, d.dir)) }

// age sets the modification time of every file under root d ago.
func age(t *testing.T, root string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReclaimCreates: the files of a staged create whose marks are all
// older than the cutoff and whose name no table took are deleted, with
// its marks and emptied directories; nothing is deleted when a mark is
// young, when a create of the name begins between the listing and the
// deletion (its new mark is seen on the second read), or when a table
// took the name (then only the stale marks go).
func TestReclaimCreates(t *testing.T) {
	ctx := context.Background()
	tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"ns"}, Name: "t"}
	opts := catalogs.ReclaimOptions{MinAge: time.Hour}
	for _, tc := range []struct {
		name     string
		young    bool // the mark is refreshed
		begins   bool // another create of the name begins before the deletion
		table    bool // a table took the name
		gone     bool // the data file is deleted
		markGone bool // the old mark is deleted
	}{
		{name: "killed", gone: true, markGone: true},
		{name: "kept alive", young: true},
		{name: "create begins meanwhile", begins: true},
		{name: "table took the name", table: true, markGone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			st := lake.Local{Root: root}
			marks := lake.Marks{Store: st, Root: lake.MarksDir, Local: st.Local}
			id := lake.NewMarkID()
			if err := marks.Put(ctx, tbl, id); err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, "ns/t/bucket-0/data-1.parquet", []byte("rows")); err != nil {
				t.Fatal(err)
			}
			age(t, root, 2*time.Hour)
			if tc.young {
				k := lake.Keeper{Marks: marks, Table: tbl, ID: id}
				if err := k.Start(ctx); err != nil {
					t.Fatal(err)
				}
			}
			r := lake.Reclaimer{}
			if tc.begins {
				r.BeforeRecheck = func(catalogs.TableIdent) {
					if err := marks.Put(ctx, tbl, lake.NewMarkID()); err != nil {
						t.Fatal(err)
					}
				}
			}
			rep, err := r.ReclaimCreates(ctx, "c", marks, opts, time.Now().Add(-opts.MinAge),
				func(context.Context, catalogs.TableIdent, catalogs.ReclaimOptions) (lake.CreateDir, error) {
					return localCreate{st: st, dir: "ns/t", table: func() bool { return tc.table }}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			_, derr := os.Stat(filepath.Join(root, "ns/t/bucket-0/data-1.parquet"))
			_, merr := os.Stat(filepath.Join(root, lake.MarksDir, "ns/t", id))
			if gone := os.IsNotExist(derr); gone != tc.gone {
				t.Errorf("data file deleted %v, want %v (report %+v)", gone, tc.gone, rep)
			}
			if gone := os.IsNotExist(merr); gone != tc.markGone {
				t.Errorf("mark deleted %v, want %v (report %+v)", gone, tc.markGone, rep)
			}
			if tc.gone {
				for _, d := range []string{"ns/t", lake.MarksDir + "/ns"} {
					if _, err := os.Stat(filepath.Join(root, d)); !os.IsNotExist(err) {
						t.Errorf("the directory %s is left: %v", d, err)
					}
				}
				if rep.Creates != 1 || rep.DataFiles != 1 || rep.MetadataFiles != 1 {
					t.Errorf("report %+v, want 1 create, 1 data file, 1 mark", rep)
				}
			}
		})
	}
}

// TestKeeper: a stream's mark is written again only once Every has
// passed since the last write.
func TestKeeper(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	tbl := catalogs.TableIdent{Catalog: "c", Namespace: []string{"ns"}, Name: "t"}
	k := lake.Keeper{Marks: lake.Marks{Store: lake.Local{Root: root}, Root: lake.MarksDir}, Table: tbl, ID: lake.NewMarkID(), Every: 50 * time.Millisecond}
	if err := k.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, lake.MarksDir, "ns", "t", k.ID)
	age(t, root, time.Hour)
	mod := func() time.Time {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	if err := k.Keep(ctx); err != nil {
		t.Fatal(err)
	}
	if time.Since(mod()) < 30*time.Minute {
		t.Error("Keep rewrote the mark before Every passed")
	}
	time.Sleep(60 * time.Millisecond)
	if err := k.Keep(ctx); err != nil {
		t.Fatal(err)
	}
	if time.Since(mod()) > time.Minute {
		t.Error("Keep did not rewrite the mark once Every passed")
	}
}
