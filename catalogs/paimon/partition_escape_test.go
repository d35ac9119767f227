package paimon_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestPartitionValueStaysInTable: partition values that spell paths
// ("..", "/../../x", their URL escapes, a backslash, unicode) are data:
// Paimon escapes them into one directory name, every file the write and
// commit make lies inside the table's directory, and the rows read back
// with their values.
func TestPartitionValueStaysInTable(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "parts"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"partition": "p"}); err != nil {
		t.Fatal(err)
	}
	values := []string{"", "..", ".", "/../../../../../escaped", "%2F..%2F..%2Fescaped", "a/../../b", "..\\..", "ü／..", "\x00x", "p=1/q"}
	var rows []sampleRow
	for i, v := range values {
		rows = append(rows, sampleRow{id: int64(i), p: v})
	}
	b := sampleBatch(rows)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(wh, "default.db", "parts") + "/"
	filepath.Walk(filepath.Dir(wh), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Name() != ".flightgw-db" && !strings.HasPrefix(path, table) {
			t.Errorf("file outside the table's directory: %s", path)
		}
		return nil
	})
	var want []string
	for _, r := range rows {
		want = append(want, r.render())
	}
	slices.Sort(want)
	if got := scanRendered(t, p, id); !slices.Equal(got, want) {
		t.Errorf("read back\n%q\nwant\n%q", got, want)
	}
}

// TestPartitionValueTooLong: a partition value whose directory name is
// over 255 bytes as Paimon stores it (escaped) failed as Unavailable
// (ENAMETOOLONG), which a client retries. It is InvalidArgument naming
// the partition column and the limit; a value within it is written.
func TestPartitionValueTooLong(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "parts"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"partition": "p"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		value string
		ok    bool
	}{
		{strings.Repeat("x", 300), false},
		{strings.Repeat("%", 90), false}, // %25 each: 272 bytes
		{strings.Repeat("ü", 130), false},
		{strings.Repeat("x", 253), true}, // "p=" and 253 bytes: 255
	} {
		b := sampleBatch([]sampleRow{{id: int64(i), p: c.value}})
		r, err := p.WriteBatch(ctx, id, b)
		b.Release()
		if err == nil {
			_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{r})
		}
		switch {
		case c.ok && err != nil:
			t.Errorf("%d bytes: %v", len(c.value), err)
		case !c.ok && (!errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "partition column p") ||
			!strings.Contains(err.Error(), "limit of 255 bytes")):
			t.Errorf("%d bytes: %v, want InvalidArgument naming the column and the limit", len(c.value), err)
		}
	}
}
