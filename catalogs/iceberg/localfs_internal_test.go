package iceberg

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
)

// TestLiteralFS: a file: location names the file by its characters, as
// Iceberg Java, pyiceberg and DuckDB read it (iceberg-go's LocalFS
// URL-decoded it, so a partition value's escapes named one directory in
// the manifest and another on disk); a file at the decoded path, as the
// gateway wrote it before, is still read, stat'ed and deleted through its
// location, unless decoding would make an unclean path.
func TestLiteralFS(t *testing.T) {
	dir := t.TempDir()
	fsys, err := iceio.LoadFS(context.Background(), nil, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	w := fsys.(iceio.WriteFileIO)
	// Written: at the literal path.
	for _, c := range []struct{ loc, disk string }{
		{"file://" + dir + "/s_trunc=p%C3%A9/a", dir + "/s_trunc=p%C3%A9/a"},
		{"file://localhost" + dir + "/cat=b%2Fc%3Dd+e%25/a", dir + "/cat=b%2Fc%3Dd+e%25/a"},
		{"file:" + dir + "/java%20style/a", dir + "/java%20style/a"},
		{dir + "/bare%41/a", dir + "/bare%41/a"},
	} {
		if err := w.WriteFile(c.loc, []byte("x")); err != nil {
			t.Fatalf("write %s: %v", c.loc, err)
		}
		if _, err := os.Stat(c.disk); err != nil {
			t.Errorf("%s written, but not at %s: %v", c.loc, c.disk, err)
		}
	}
	// Written before at the decoded path: found there.
	old := filepath.Join(dir, "s_trunc=pü", "f")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	loc := "file://" + dir + "/s_trunc=p%C3%BC/f"
	if b, err := fsys.(iceio.ReadFileIO).ReadFile(loc); err != nil || string(b) != "old" {
		t.Errorf("ReadFile(%s) = %q, %v; want the file at the decoded path", loc, b, err)
	}
	if f, err := fsys.Open(loc); err != nil {
		t.Errorf("Open(%s): %v", loc, err)
	} else {
		f.Close()
	}
	if err := fsys.Remove(loc); err != nil {
		t.Errorf("Remove(%s): %v", loc, err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Remove(%s) the decoded file: %v", loc, err)
	}
	// Never a fallback that climbs: "%2e%2e" is a name, not "..".
	outside := filepath.Join(filepath.Dir(dir), "climbed")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(outside)
	climb := "file://" + dir + "/%2e%2e/climbed"
	if _, err := fsys.Open(climb); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(%s) = %v, want not found (no decoded fallback out of the directory)", climb, err)
	}
	if err := fsys.Remove(climb); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove(%s) = %v, want not found", climb, err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the file outside: %v", err)
	}
}
