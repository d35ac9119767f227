package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/refindex"
)

// refLoads is how many manifest lists and manifests the table's index has
// read so far.
func refLoads(t *testing.T, p *Provider, id catalogs.TableIdent) int {
	n := 0
	if err := p.refs.get().With(id.String(), func(x *refindex.Index) error { n = x.Loads; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func stageIDs(t *testing.T, p *Provider, id catalogs.TableIdent, from int64) catalogs.WriteReceipt {
	t.Helper()
	b := idBatch(from, 5)
	defer b.Release()
	r, err := p.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantReferenced(t *testing.T, p *Provider, id catalogs.TableIdent, r catalogs.WriteReceipt, referenced bool, what string) {
	t.Helper()
	err := p.CheckUnreferenced(context.Background(), id, []catalogs.WriteReceipt{r})
	switch {
	case referenced && !(errors.Is(err, catalogs.ErrFailedPrecondition) && strings.Contains(err.Error(), "referenced")):
		t.Fatalf("%s: %v, want FailedPrecondition (referenced)", what, err)
	case !referenced && err != nil:
		t.Fatalf("%s: %v, want unreferenced", what, err)
	}
}

// sameAsFullWalk compares the index's answer for every file under the
// table's directory with the reclaimer's full walk (refs.addTable).
func sameAsFullWalk(t *testing.T, p *Provider, id catalogs.TableIdent) {
	t.Helper()
	ctx := context.Background()
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	walk := newRefs()
	if err := walk.addTable(mustIO(t, tbl), tbl); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(localTableDir(t, p, id), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		meta, err := json.Marshal(receiptMeta{Format: receiptFormat, Table: id.String(), Files: []stagedFile{{Path: path}}})
		if err != nil {
			return err
		}
		err = p.CheckUnreferenced(ctx, id, []catalogs.WriteReceipt{{Metadata: meta}})
		if err != nil && !errors.Is(err, catalogs.ErrFailedPrecondition) {
			return err
		}
		got := err != nil
		if got != walk.has(path) {
			t.Errorf("%s: the index says referenced=%v, the full walk %v", path, got, walk.has(path))
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walk: %v, %d files", err, n)
	}
}

// TestCheckUnreferencedIncremental: a check after a commit reads that
// commit's manifest list and new manifest, and only those, and sees the
// file it added (an index answering from what it held would not); it
// answers as the full walk of the metadata does, after commits, an
// overwrite, and the table dropped and created again under its name.
func TestCheckUnreferencedIncremental(t *testing.T) {
	ctx := context.Background()
	p, id, _ := planTable(t)
	for i := range 3 {
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stageIDs(t, p, id, int64(100+10*i))}); err != nil {
			t.Fatal(err)
		}
	}
	r := stageIDs(t, p, id, 500)
	wantReferenced(t, p, id, r, false, "a staged file")
	before := refLoads(t, p, id)
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stageIDs(t, p, id, 600)}); err != nil {
		t.Fatal(err)
	}
	wantReferenced(t, p, id, r, false, "a staged file after another commit")
	if n := refLoads(t, p, id) - before; n != 2 {
		t.Errorf("check after one commit read %d lists and manifests, want 2 (its list, its manifest)", n)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
	wantReferenced(t, p, id, r, true, "the file just committed")
	if _, err := p.CommitOverwrite(ctx, id, "", []catalogs.WriteReceipt{stageIDs(t, p, id, 700)}); err != nil {
		t.Fatal(err)
	}
	wantReferenced(t, p, id, r, true, "a file an overwrite replaced")
	sameAsFullWalk(t, p, id)

	// Dropped and created again: the old snapshots are gone, so are their
	// references; the new table's are seen.
	if err := p.DropTable(ctx, id); err != nil {
		t.Fatal(err)
	}
	sc := ice.NewSchema(0, ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true})
	if _, err := p.cat.CreateTable(ctx, []string{"default", "t"}, sc); err != nil {
		t.Fatal(err)
	}
	r2 := stageIDs(t, p, id, 800)
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r2}); err != nil {
		t.Fatal(err)
	}
	wantReferenced(t, p, id, r2, true, "a file of the new table")
	sameAsFullWalk(t, p, id)
}
