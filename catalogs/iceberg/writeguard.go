package iceberg

import (
	"context"
	"io/fs"
	"sync"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// guardWrites returns the file IO of a table a writer writes through: it
// creates no file outside the table's location, as the storage resolves
// the path. iceberg-go builds a data file's path from the partition
// values (URL-escaped, "/" as %2F) and its local IO URL-decodes file
// URLs, so an identity partition value such as "/../../x" would
// otherwise become directories climbing out of the table. Anything that
// is not a plain write IO is returned as it is (fileIO refuses it).
//
// Each refusal is also kept in refused: iceberg-go's partitioned writer
// can drop the error of a partition's writer that fails after its last
// batch was queued (its stream leaves the factory's writer list before
// closeAll asks it), so the writer reads refused after WriteRecords.
func guardWrites(t catalogs.TableIdent, tbl *table.Table, refused *refusal) func(context.Context) (iceio.IO, error) {
	return func(ctx context.Context) (iceio.IO, error) {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		w, ok := fsys.(iceio.WriteFileIO)
		if !ok {
			return fsys, nil
		}
		loc, err := resolveLocation(tbl.Location())
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: location refused: %v", t, err)
		}
		g := guardedIO{WriteFileIO: w, t: t, loc: loc, refused: refused}
		if l, ok := fsys.(iceio.ListableIO); ok {
			return guardedListIO{guardedIO: g, walk: l.WalkDir}, nil
		}
		return g, nil
	}
}

// guardedIO refuses to create a file outside the table's location.
type guardedIO struct {
	iceio.WriteFileIO
	t       catalogs.TableIdent
	loc     storeLoc
	refused *refusal
}

// refusal keeps the first file a guardedIO refused.
type refusal struct {
	mu  sync.Mutex
	err error
}

func (r *refusal) set(err error) error {
	if r != nil && err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return err
}

// get returns the first refusal, or nil.
func (r *refusal) get() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Create checks name before creating it.
func (g guardedIO) Create(name string) (iceio.FileWriter, error) {
	if err := checkFile(g.t, g.loc, name); err != nil {
		return nil, g.refused.set(err)
	}
	return g.WriteFileIO.Create(name)
}

// WriteFile checks name before writing it.
func (g guardedIO) WriteFile(name string, p []byte) error {
	if err := checkFile(g.t, g.loc, name); err != nil {
		return g.refused.set(err)
	}
	return g.WriteFileIO.WriteFile(name, p)
}

// guardedListIO is a guardedIO over a storage that can also list.
type guardedListIO struct {
	guardedIO
	walk func(root string, fn fs.WalkDirFunc) error
}

// WalkDir walks the storage as it is.
func (g guardedListIO) WalkDir(root string, fn fs.WalkDirFunc) error { return g.walk(root, fn) }
