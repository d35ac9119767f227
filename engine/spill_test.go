//go:build duckdb_arrow

package engine

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
)

// The spill tests sort spillRows rows of about 100 bytes each (an id, a
// sort key and a 64-character string) under a 64MB memory limit: the sort
// cannot finish in memory, so it fails or spills. One thread, because with
// two DuckDB's spilling sort needs more than a 48MB limit gives it and
// fails now and then.
const (
	spillLimit = "64MB"
	spillRows  = 1_000_000
	// spillPrime is a prime above spillRows, so k = i*7919 mod spillPrime
	// is a permutation of i: sorting by it shuffles the rows.
	spillPrime = 2_000_003
	// spillMin is the least DuckDB must have written to its temp files
	// for the test to call it a spill (it writes about 70MB).
	spillMin = 16 << 20
)

var spillQuery = fmt.Sprintf(`SELECT i, (i * 7919) %% %d AS k, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS s
	FROM range(%d) t(i) ORDER BY k`, spillPrime, spillRows)

func noTables(_, _, name string) (Table, error) {
	return Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", name)
}

// dirUsage counts the files under dir (at any depth) and their bytes.
func dirUsage(dir string) (files int, bytes int64, names []string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a file DuckDB deleted while we walked
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files++
		bytes += info.Size()
		names = append(names, filepath.Base(p))
		return nil
	})
	return files, bytes, names
}

// watchDir polls dir until the returned stop is called, which reports the
// most bytes and files it ever held.
func watchDir(dir string) (stop func() (files int, bytes int64, names []string)) {
	var mu sync.Mutex
	var maxFiles int
	var maxBytes int64
	var maxNames []string
	quit, done := make(chan struct{}), make(chan struct{})
	poll := func() {
		f, b, n := dirUsage(dir)
		mu.Lock()
		defer mu.Unlock()
		maxFiles = max(maxFiles, f)
		if b > maxBytes {
			maxBytes, maxNames = b, n
		}
	}
	go func() {
		defer close(done)
		for {
			poll()
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() (int, int64, []string) {
		close(quit)
		<-done
		poll()
		return maxFiles, maxBytes, maxNames
	}
}

func md5Hex(i int64) string {
	sum := md5.Sum([]byte(strconv.FormatInt(i, 10)))
	return hex.EncodeToString(sum[:])
}

func stringAt(t *testing.T, col arrow.Array, i int) string {
	t.Helper()
	switch c := col.(type) {
	case *array.String:
		return c.Value(i)
	case *array.LargeString:
		return c.Value(i)
	case *array.StringView:
		return c.Value(i)
	}
	t.Fatalf("column s is %s, not a string", col.DataType())
	return ""
}

// sortChecker checks, batch by batch, that the spill query's result is
// every i in [0, spillRows) exactly once, in increasing k, with the right
// k and s.
type sortChecker struct {
	seen  []bool
	rows  int
	prevK int64
}

func newSortChecker() *sortChecker { return &sortChecker{seen: make([]bool, spillRows), prevK: -1} }

func (c *sortChecker) add(t *testing.T, b arrow.RecordBatch) {
	t.Helper()
	if b.NumCols() != 3 {
		t.Fatalf("result has %d columns: %s", b.NumCols(), b.Schema())
	}
	is, ok1 := b.Column(0).(*array.Int64)
	ks, ok2 := b.Column(1).(*array.Int64)
	if !ok1 || !ok2 {
		t.Fatalf("result schema %s", b.Schema())
	}
	for j := range int(b.NumRows()) {
		i, k := is.Value(j), ks.Value(j)
		if i < 0 || i >= spillRows || c.seen[i] {
			t.Fatalf("row %d: i = %d out of range or repeated", c.rows, i)
		}
		c.seen[i] = true
		if want := i * 7919 % spillPrime; k != want {
			t.Fatalf("row %d: i %d has k %d, want %d", c.rows, i, k, want)
		}
		if k <= c.prevK {
			t.Fatalf("row %d: k %d after %d: not sorted", c.rows, k, c.prevK)
		}
		c.prevK = k
		if s, want := stringAt(t, b.Column(2), j), md5Hex(i)+md5Hex(i+1); s != want {
			t.Fatalf("row %d: i %d has s %q, want %q", c.rows, i, s, want)
		}
		c.rows++
	}
}

func (c *sortChecker) done(t *testing.T) {
	t.Helper()
	if c.rows != spillRows {
		t.Fatalf("%d rows, want %d", c.rows, spillRows)
	}
}

func newSpillEngine(t *testing.T, tempDir string) *Engine {
	t.Helper()
	eng, err := New(Options{MemoryLimit: spillLimit, Threads: 1, TempDir: tempDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

// TestSpillSortCompletes: a sort bigger than memory_limit, with a temp
// directory, returns the whole, right result, having written its runs to
// the temp directory; when the result has been read and closed, the temp
// files are gone.
func TestSpillSortCompletes(t *testing.T) {
	dir := t.TempDir()
	eng := newSpillEngine(t, dir)
	stop := watchDir(dir)
	start := time.Now()
	r, err := eng.Query(context.Background(), spillQuery, nil, noTables)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	defer r.Close()
	check := newSortChecker()
	for first := true; r.Next(); first = false {
		if first {
			// The sort has consumed its whole input before its first row
			// comes out, and reads its spilled runs back as it streams.
			files, bytes, names := dirUsage(dir)
			t.Logf("first batch after %v: %d temp files, %d bytes: %v", time.Since(start), files, bytes, names)
			if bytes < spillMin {
				t.Errorf("temp directory holds %d bytes in %d files at the first batch: the sort did not spill", bytes, files)
			}
		}
		check.add(t, r.RecordBatch())
	}
	if err := r.Err(); err != nil {
		t.Fatalf("spilling sort failed after %d rows: %v", check.rows, err)
	}
	check.done(t)
	r.Close()
	maxFiles, maxBytes, names := stop()
	t.Logf("%d rows in %v; temp directory peaked at %d files, %d bytes: %v",
		check.rows, time.Since(start), maxFiles, maxBytes, names)
	if maxBytes < spillMin {
		t.Errorf("temp directory peaked at %d bytes: the sort did not spill", maxBytes)
	}
	if files, bytes, names := dirUsage(dir); files != 0 {
		t.Errorf("after Close, the temp directory still holds %d files, %d bytes: %v", files, bytes, names)
	}
}

// TestSpillClosedEarly: closing the result of a spilled sort before the
// end deletes its temp files, and the engine keeps serving.
func TestSpillClosedEarly(t *testing.T) {
	dir := t.TempDir()
	eng := newSpillEngine(t, dir)
	r, err := eng.Query(context.Background(), spillQuery, nil, noTables)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Next() {
		t.Fatalf("no first batch: %v", r.Err())
	}
	newSortChecker().add(t, r.RecordBatch())
	files, bytes, _ := dirUsage(dir)
	if bytes < spillMin {
		t.Fatalf("temp directory holds %d bytes in %d files at the first batch: the sort did not spill", bytes, files)
	}
	r.Close()
	if left, leftBytes, names := dirUsage(dir); left != 0 {
		t.Errorf("after Close, the temp directory still holds %d files, %d bytes (%v); it held %d bytes before",
			left, leftBytes, names, bytes)
	}
	f := &fixture{eng: eng, resolve: noTables}
	if got, err := f.rows(t, `SELECT sum(i) FROM range(1000) t(i)`, nil); err != nil || len(got) != 1 || got[0] != "499500" {
		t.Fatalf("engine after a closed spilling query: %v %v", got, err)
	}
}

// TestSpillWithoutTempDir: without a temp directory the same sort fails
// with ErrResourceExhausted, writes nothing to disk (not even to .tmp in
// the working directory, DuckDB's default for an in-memory database), and
// the engine keeps serving.
func TestSpillWithoutTempDir(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	eng := newSpillEngine(t, "")
	stop := watchDir(cwd)
	start := time.Now()
	f := &fixture{eng: eng, resolve: noTables}
	r, err := eng.Query(context.Background(), spillQuery, nil, noTables)
	rows := 0
	if err == nil {
		for r.Next() {
			rows += int(r.RecordBatch().NumRows())
		}
		err = r.Err()
		r.Close()
	}
	files, bytes, names := stop()
	t.Logf("after %v: %v", time.Since(start), err)
	if files != 0 {
		t.Errorf("with no temp directory, DuckDB wrote %d files, %d bytes, under the working directory: %v",
			files, bytes, names)
	}
	if !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("sort over memory_limit with no temp directory: %d rows, error %v; want ErrResourceExhausted", rows, err)
	}
	for _, want := range []string{"Out of Memory", "engine.memory_limit", "engine.temp_dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got, err := f.rows(t, `SELECT sum(i) FROM range(1000) t(i)`, nil); err != nil || len(got) != 1 || got[0] != "499500" {
		t.Fatalf("engine after an out-of-memory query: %v %v", got, err)
	}
}
