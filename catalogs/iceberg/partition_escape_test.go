package iceberg_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestPartitionValueStaysInTable: iceberg-go spells a partition value's
// "/" as %2F in a data file's URL, and its local IO decoded it again, so
// an identity partition value "/../../../../../escaped" made directories
// climbing out of the table and left a Parquet file there (literalFS,
// localfs.go, now reads the URL by its characters, but falls back to the
// decoded path for the files written before). Such a write
// is refused, InvalidArgument naming the table, and nothing is written
// outside the table's data directory; values that only look like paths
// ("..", "%2F..", "a/b") are written inside it and committed.
func TestPartitionValueStaysInTable(t *testing.T) {
	p, wh := openLocal(t, nil)
	createPartitioned(t, wh)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "events"}
	write := func(i int, v string) error {
		b := eventBatch(t, v, 1, int64(i)*100, 3)
		defer b.Release()
		r, err := p.WriteBatch(ctx, id, b)
		if err != nil {
			return err
		}
		_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{r})
		return err
	}
	// "" makes the directory "cat=" that the climb starts from; five ".."
	// from it reach the directory holding the warehouse.
	for i, v := range []string{"", "..", "%2F..%2F..", "a/b", "ü/..%2e"} {
		if err := write(i, v); err != nil {
			t.Errorf("value %q: %v", v, err)
		}
	}
	for i, v := range []string{"/../../../../../escaped", "a/../../../../../../escaped", "x/", "/./"} {
		err := write(10+i, v)
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "table lake.default.events") {
			t.Errorf("value %q: %v, want ErrInvalidArgument naming the table", v, err)
		}
	}
	data := filepath.Join(wh, "default.db", "events", "data") + "/"
	filepath.Walk(filepath.Dir(wh), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(path, ".parquet") && !strings.HasPrefix(path, data) {
			t.Errorf("data file outside the table's data directory: %s", path)
		}
		return nil
	})
}

// TestPartitionValueTooLong: an identity partition value whose directory
// name is over 255 bytes as stored failed as Unavailable ("the Parquet
// writer wrote 0 of the 1 rows sent", iceberg-go having lost the
// ENAMETOOLONG), which a client retries. It is InvalidArgument naming the
// partition column and the limit; a value within it is written.
func TestPartitionValueTooLong(t *testing.T) {
	p, wh := openLocal(t, nil)
	createPartitioned(t, wh)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "events"}
	for i, c := range []struct {
		value string
		ok    bool
	}{
		{strings.Repeat("x", 300), false},
		{strings.Repeat("x", 5000), false},
		{strings.Repeat("ü", 130), false},
		{strings.Repeat("x", 251), true}, // "cat=" and 251 bytes: 255
	} {
		b := eventBatch(t, c.value, 1, int64(i)*100, 1)
		r, err := p.WriteBatch(ctx, id, b)
		b.Release()
		if err == nil {
			_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{r})
		}
		switch {
		case c.ok && err != nil:
			t.Errorf("%d bytes: %v", len(c.value), err)
		case !c.ok && (!errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "partition column cat") ||
			!strings.Contains(err.Error(), "limit of 255 bytes")):
			t.Errorf("%d bytes: %v, want InvalidArgument naming the column and the limit", len(c.value), err)
		}
	}
}
