package paimon_test

import (
	"context"
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
	if _, err := p.CreateTableWithOptions(ctx, id, sampleSchema, map[string]string{"partition": "p"}); err != nil {
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
