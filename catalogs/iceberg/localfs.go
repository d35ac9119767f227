package iceberg

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"path"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
)

// A file: location names a local file by its characters, as Iceberg Java
// (Hadoop's Path), pyiceberg (PyArrowFileIO) and DuckDB read it: the
// escapes of a partition value ("s_trunc=p%C3%A9", "cat=b%2Fc") are part
// of the directory's name, as they are in the files those engines write.
// iceberg-go's LocalFS URL-decodes the location instead, so a file of a
// partition whose value needs escaping was written at "s_trunc=pé" while
// the manifest recorded "s_trunc=p%C3%A9", where every other reader
// looked and found nothing. literalFS, registered for the file scheme in
// place of LocalFS, keeps the characters; a file the gateway wrote before
// at the decoded path is still read and deleted there (fallback), so
// tables written before stay readable.
type literalFS struct{ iceio.LocalFS }

func init() {
	iceio.Unregister("file")
	iceio.Register("file", func(context.Context, *url.URL, map[string]string) (iceio.IO, error) {
		return literalFS{}, nil
	})
}

// literalPath is the local path a file: location names, its characters
// kept: "file://[localhost]/p" and "file:/p" are "/p". Anything else (a
// bare path) is passed on as it is, which LocalFS takes literally too.
func literalPath(name string) string {
	if len(name) < 6 || !strings.EqualFold(name[:5], "file:") {
		return name // a bare path; LocalFS refuses what is not a local location
	}
	rest := name[5:]
	if r, ok := strings.CutPrefix(rest, "//"); ok {
		if len(r) >= 10 && strings.EqualFold(r[:9], "localhost") && r[9] == '/' {
			r = r[9:]
		}
		if !strings.HasPrefix(r, "/") {
			return name // another host: LocalFS refuses it
		}
		return r
	}
	if strings.HasPrefix(rest, "/") {
		return rest
	}
	return name
}

// decodedPath is where LocalFS put the file at name, when that differs
// from its literal path and is a clean path (no '.' or '..' segment: the
// gateway never wrote a file there, and no fallback may step out of a
// directory).
func decodedPath(name string) (string, bool) {
	lit := literalPath(name)
	if !strings.Contains(lit, "%") || lit == name {
		return "", false
	}
	p, err := url.PathUnescape(lit)
	if err != nil || p == lit || !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.ContainsAny(p, "\x00\\") {
		return "", false
	}
	return p, true
}

// fallback runs op on the literal path, and on the decoded one when the
// literal file does not exist.
func fallback[T any](name string, op func(string) (T, error)) (T, error) {
	v, err := op(literalPath(name))
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		if p, ok := decodedPath(name); ok {
			if v2, err2 := op(p); err2 == nil || !errors.Is(err2, fs.ErrNotExist) {
				return v2, err2
			}
		}
	}
	return v, err
}

func (f literalFS) Open(name string) (iceio.File, error) {
	return fallback(name, f.LocalFS.Open)
}

func (f literalFS) ReadFile(name string) ([]byte, error) {
	return fallback(name, f.LocalFS.ReadFile)
}

func (f literalFS) Stat(name string) (fs.FileInfo, error) {
	return fallback(name, f.LocalFS.Stat)
}

func (f literalFS) Remove(name string) error {
	_, err := fallback(name, func(p string) (struct{}, error) { return struct{}{}, f.LocalFS.Remove(p) })
	return err
}

func (f literalFS) Create(name string) (iceio.FileWriter, error) {
	return f.LocalFS.Create(literalPath(name))
}

func (f literalFS) WriteFile(name string, content []byte) error {
	return f.LocalFS.WriteFile(literalPath(name), content)
}

func (f literalFS) RemoveAll(name string) error { return f.LocalFS.RemoveAll(literalPath(name)) }

func (f literalFS) WalkDir(root string, fn fs.WalkDirFunc) error {
	return f.LocalFS.WalkDir(literalPath(root), fn)
}

func (f literalFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return f.LocalFS.ReadDir(literalPath(name))
}

func (f literalFS) MkdirAll(name string) error { return f.LocalFS.MkdirAll(literalPath(name)) }

func (f literalFS) Mkdir(name string) error { return f.LocalFS.Mkdir(literalPath(name)) }

func (f literalFS) Rename(oldpath, newpath string) error {
	return f.LocalFS.Rename(literalPath(oldpath), literalPath(newpath))
}

func (f literalFS) RenameNoReplace(oldpath, newpath string) error {
	return f.LocalFS.RenameNoReplace(literalPath(oldpath), literalPath(newpath))
}
