package lake

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
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// ErrExists is returned by Store.Create when the object exists: the
// compare-and-swap of a commit lost against another committer.
var ErrExists = errors.New("object already exists")

// Store is a warehouse's object store: local files or an S3 bucket. Paths
// are slash-separated and relative to the warehouse root; every path a
// backend builds comes from validated names (catalogs.TableIdent.Validate)
// and its own file names, never from file contents.
type Store interface {
	// Read returns a whole object; fs.ErrNotExist when it is missing.
	Read(ctx context.Context, path string) ([]byte, error)
	// Create writes an object only if it does not exist yet (put-if-absent),
	// atomically: readers see the whole object or none. ErrExists when it
	// exists.
	Create(ctx context.Context, path string, data []byte) error
	// Put writes or replaces an object atomically (the LATEST and EARLIEST
	// hints).
	Put(ctx context.Context, path string, data []byte) error
	// Writer opens a new object for streaming (data files); the object
	// appears when the writer is closed.
	Writer(ctx context.Context, path string) (io.WriteCloser, error)
	// Open opens an object for random access (Parquet reads).
	Open(ctx context.Context, path string) (Object, error)
	// Remove deletes an object; a missing object is not an error.
	Remove(ctx context.Context, path string) error
	// RemoveAll deletes every object under dir.
	RemoveAll(ctx context.Context, dir string) error
	// List returns the names (not paths) of the objects and directories
	// directly under dir, sorted; an empty list when dir is missing.
	List(ctx context.Context, dir string) ([]string, error)
	// Exists reports whether an object or directory exists at path.
	Exists(ctx context.Context, path string) (bool, error)
	// Local returns the local file system path of path, when the storage
	// is local (the SQL engine then reads Parquet files itself).
	Local(path string) (string, bool)
	// Walk calls fn for every object (not directory) under dir, with its
	// path relative to dir, its size and its modification time (what a
	// reclaimer needs to tell an orphan from a file a writer is about to
	// commit). An error of fn stops the walk and is returned.
	Walk(ctx context.Context, dir string, fn func(rel string, size int64, mod time.Time) error) error
}

var (
	_ Store = Local{}
	_ Store = (*S3)(nil)
)

// Object is an open object: io.ReaderAt and io.Seeker for the Parquet
// reader, with its size.
type Object interface {
	io.ReaderAt
	io.ReadSeeker
	io.Closer
	Size() int64
}

// Local is a warehouse on the local file system, under Root.
type Local struct{ Root string }

func (l Local) abs(p string) string { return filepath.Join(l.Root, filepath.FromSlash(p)) }

func (l Local) Local(p string) (string, bool) { return l.abs(p), true }

func (l Local) Read(_ context.Context, p string) ([]byte, error) { return os.ReadFile(l.abs(p)) }

// Create writes a temporary file and hard-links it to its name: link(2)
// fails when the name exists, which makes the write exclusive and atomic
// on every POSIX file system (rename would replace the winner's file).
func (l Local) Create(_ context.Context, p string, data []byte) error {
	tmp, err := l.writeTemp(p, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, l.abs(p)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return ErrExists
		}
		return err
	}
	return nil
}

func (l Local) Put(_ context.Context, p string, data []byte) error {
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
func (l Local) writeTemp(p string, data []byte) (string, error) {
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

func (l Local) Writer(_ context.Context, p string) (io.WriteCloser, error) {
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

func (l Local) Open(_ context.Context, p string) (Object, error) {
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

func (l Local) Remove(_ context.Context, p string) error {
	if err := os.Remove(l.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (l Local) RemoveAll(_ context.Context, dir string) error { return os.RemoveAll(l.abs(dir)) }

func (l Local) List(_ context.Context, dir string) ([]string, error) {
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

func (l Local) Exists(_ context.Context, p string) (bool, error) {
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

// Join joins slash paths and refuses one that would leave its first
// element (a defence in depth: names are already validated).
func Join(base string, elems ...string) (string, error) {
	p := strings.Join(append([]string{base}, elems...), "/")
	for _, e := range strings.Split(p, "/") {
		if e == ".." || e == "." {
			return "", fmt.Errorf("path %q leaves its directory", p)
		}
	}
	return p, nil
}

// IsNotExist reports whether err says the object is missing.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// MapErr classifies a storage error: a missing object is ErrNotFound, a
// refused one ErrPermissionDenied, the rest ErrUnavailable (storage
// failures are not the client's fault). An error that already has a kind
// keeps it; msg names the object and the operation.
func MapErr(err error, msg string) error {
	if err == nil {
		return nil
	}
	if catalogs.Kind(err) != nil {
		return err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return catalogs.Wrap(catalogs.ErrNotFound, err, msg)
	}
	if errors.Is(err, fs.ErrPermission) {
		return catalogs.Wrap(catalogs.ErrPermissionDenied, err, msg)
	}
	if catalogs.NameTooLong(err) {
		// A name the client chose (a partition value) too long for the
		// storage: its fault, never retried (catalogs.CheckFilePath
		// refuses most such names before the storage sees them).
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, msg)
	}
	return catalogs.Wrap(catalogs.ErrUnavailable, err, msg)
}

// PathBound is how long path is as st stores it (the local path, the
// object key) and the longest it may be there, for
// catalogs.CheckFilePath.
func PathBound(st Store, path string) (int, int) {
	if l, ok := st.Local(path); ok {
		return len(l), catalogs.MaxLocalPathBytes
	}
	if s3, ok := st.(*S3); ok {
		return len(s3.key(path)), catalogs.MaxObjectKeyBytes
	}
	return len(path), catalogs.MaxObjectKeyBytes
}
