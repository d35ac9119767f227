package paimon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// errExists is returned by storage.create when the object exists: the
// compare-and-swap of a commit lost against another committer.
var errExists = errors.New("object already exists")

// storage is the warehouse's file system. Paths are slash-separated and
// relative to the warehouse root; every path this package builds comes
// from validated names (catalogs.TableIdent.Validate) and its own file
// names, never from file contents.
type storage interface {
	// read returns a whole object; fs.ErrNotExist when it is missing.
	read(ctx context.Context, path string) ([]byte, error)
	// create writes an object only if it does not exist yet (put-if-absent),
	// atomically: readers see the whole object or none. errExists when it
	// exists.
	create(ctx context.Context, path string, data []byte) error
	// put writes or replaces an object atomically (the LATEST and EARLIEST
	// hints).
	put(ctx context.Context, path string, data []byte) error
	// writer opens a new object for streaming (data files); the object
	// appears when the writer is closed.
	writer(ctx context.Context, path string) (io.WriteCloser, error)
	// open opens an object for random access (Parquet reads).
	open(ctx context.Context, path string) (readerAt, error)
	// remove deletes an object; a missing object is not an error.
	remove(ctx context.Context, path string) error
	// removeAll deletes every object under dir.
	removeAll(ctx context.Context, dir string) error
	// list returns the names (not paths) of the objects and directories
	// directly under dir, sorted; an empty list when dir is missing.
	list(ctx context.Context, dir string) ([]string, error)
	// exists reports whether an object or directory exists at path.
	exists(ctx context.Context, path string) (bool, error)
	// local returns the local file system path of path, when the storage
	// is local (the SQL engine then reads Parquet files itself).
	local(path string) (string, bool)
}

// readerAt is an open object: io.ReaderAt and io.Seeker for the Parquet
// reader, with its size.
type readerAt interface {
	io.ReaderAt
	io.ReadSeeker
	io.Closer
	Size() int64
}

// localFS is a warehouse on the local file system.
type localFS struct{ root string }

func (l localFS) abs(p string) string { return filepath.Join(l.root, filepath.FromSlash(p)) }

func (l localFS) local(p string) (string, bool) { return l.abs(p), true }

func (l localFS) read(_ context.Context, p string) ([]byte, error) { return os.ReadFile(l.abs(p)) }

// create writes a temporary file and hard-links it to its name: link(2)
// fails when the name exists, which makes the write exclusive and atomic
// on every POSIX file system (rename would replace the winner's file).
func (l localFS) create(_ context.Context, p string, data []byte) error {
	tmp, err := l.writeTemp(p, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, l.abs(p)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errExists
		}
		return err
	}
	return nil
}

func (l localFS) put(_ context.Context, p string, data []byte) error {
	tmp, err := l.writeTemp(p, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, l.abs(p)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a hidden temporary file beside p (Paimon's
// readers skip names starting with a dot).
func (l localFS) writeTemp(p string, data []byte) (string, error) {
	dst := l.abs(p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+"."+randomHex(8)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func (l localFS) writer(_ context.Context, p string) (io.WriteCloser, error) {
	dst := l.abs(p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
}

type localFile struct {
	*os.File
	size int64
}

func (f localFile) Size() int64 { return f.size }

func (l localFS) open(_ context.Context, p string) (readerAt, error) {
	f, err := os.Open(l.abs(p))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return localFile{File: f, size: st.Size()}, nil
}

func (l localFS) remove(_ context.Context, p string) error {
	if err := os.Remove(l.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l localFS) removeAll(_ context.Context, dir string) error { return os.RemoveAll(l.abs(dir)) }

func (l localFS) list(_ context.Context, dir string) ([]string, error) {
	es, err := os.ReadDir(l.abs(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

func (l localFS) exists(_ context.Context, p string) (bool, error) {
	_, err := os.Stat(l.abs(p))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

// join joins slash paths and refuses one that would leave its first
// element (a defence in depth: names are already validated).
func join(base string, elems ...string) (string, error) {
	p := strings.Join(append([]string{base}, elems...), "/")
	for _, e := range strings.Split(p, "/") {
		if e == ".." || e == "." {
			return "", fmt.Errorf("path %q leaves its directory", p)
		}
	}
	return p, nil
}
