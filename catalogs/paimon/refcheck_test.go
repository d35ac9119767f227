package paimon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// refTable creates table "r" in a local warehouse and returns its
// directory (on disk: tests edit it behind the provider's back).
func refTable(t *testing.T) (*Provider, catalogs.TableIdent, string) {
	t.Helper()
	wh := t.TempDir()
	p, err := Open(context.Background(), "lake", map[string]string{PropWarehouse: wh, PropCreateNamespaces: "default",
		lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20"})
	if err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "r"}
	if _, err := p.CreateTable(context.Background(), id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	return p, id, filepath.Join(wh, "default.db", "r")
}

// key is the table's key in the provider's reference cache.
func key(t *testing.T, p *Provider, id catalogs.TableIdent) string {
	t.Helper()
	dir, err := p.tableDir(id)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func commitStaged(t *testing.T, p *Provider, id catalogs.TableIdent, r catalogs.WriteReceipt) {
	t.Helper()
	if _, err := p.Commit(context.Background(), id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
}

// loads is how many manifest lists and manifests the table's index has
// read so far.
func loads(t *testing.T, p *Provider, id catalogs.TableIdent) int {
	n := 0
	if err := p.refs.get().With(key(t, p, id), func(rs *refState) error { n = rs.idx.Loads; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantRef checks CheckUnreferenced of r: refused as referenced, or not.
func wantRef(t *testing.T, p *Provider, id catalogs.TableIdent, r catalogs.WriteReceipt, referenced bool, what string) {
	t.Helper()
	err := p.CheckUnreferenced(context.Background(), id, []catalogs.WriteReceipt{r})
	switch {
	case referenced && !(errors.Is(err, catalogs.ErrFailedPrecondition) && strings.Contains(err.Error(), "referenced")):
		t.Fatalf("%s: %v, want FailedPrecondition (referenced)", what, err)
	case !referenced && err != nil:
		t.Fatalf("%s: %v, want unreferenced", what, err)
	}
}

// sameAsWalk compares the index's answer for every data file under the
// table with the full walk's (referenced).
func sameAsWalk(t *testing.T, p *Provider, id catalogs.TableIdent, dir string) {
	t.Helper()
	ctx := context.Background()
	st, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	walk, err := p.referenced(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		rel := strings.TrimPrefix(path, dir+"/")
		hit, err := p.indexed(ctx, st, []string{rel})
		if err != nil {
			return err
		}
		if (hit != "") != walk[rel] {
			t.Errorf("%s: index says referenced=%v, the full walk %v", rel, hit != "", walk[rel])
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walk of %s: %v, %d data files", dir, err, n)
	}
}

// TestCheckUnreferencedIncremental: a check after a commit reads the new
// snapshot's manifest lists and manifest, and only those, and sees the
// file that commit added (an index that answered from what it held would
// call it unreferenced).
func TestCheckUnreferencedIncremental(t *testing.T) {
	p, id, dir := refTable(t)
	for i := range 5 {
		commitRows(t, p, id, int64(i*10), 10, false)
	}
	r := stage(t, p, id, 100, 5)
	wantRef(t, p, id, r, false, "a staged file")
	before := loads(t, p, id)
	commitRows(t, p, id, 200, 5, false)
	wantRef(t, p, id, r, false, "a staged file after another commit")
	if n := loads(t, p, id) - before; n < 1 || n > 3 {
		t.Errorf("check after one commit read %d lists and manifests, want 1 to 3 (its base and delta lists, its manifest)", n)
	}
	commitStaged(t, p, id, r)
	wantRef(t, p, id, r, true, "the file just committed")
	wantRef(t, p, id, r, true, "the file just committed, checked again")
	commitRows(t, p, id, 300, 5, true) // an overwrite deletes r's file
	wantRef(t, p, id, r, true, "a file an overwrite deleted")
	sameAsWalk(t, p, id, dir)
}

// TestCheckUnreferencedRollback: after a rollback deleted the newest
// snapshots, new commits reuse their ids; the remembered snapshots of
// those ids are stale and must not hide a file only the new ones hold.
// Here the new latest snapshot's base is compacted (as a Java writer's
// manifest compaction leaves it), so only the new snapshots 2 and 3 name
// r's file: the old ones, had they been trusted, never did.
func TestCheckUnreferencedRollback(t *testing.T) {
	p, id, dir := refTable(t)
	for i := range 3 {
		commitRows(t, p, id, int64(i*10), 10, false)
	}
	r := stage(t, p, id, 100, 5)
	wantRef(t, p, id, r, false, "a staged file")
	for _, n := range []string{"snapshot-2", "snapshot-3"} {
		if err := os.Remove(filepath.Join(dir, "snapshot", n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot", hintLatest), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	commitStaged(t, p, id, r)           // snapshot 2
	commitRows(t, p, id, 200, 5, false) // 3
	commitRows(t, p, id, 300, 5, false) // 4
	p4 := filepath.Join(dir, "snapshot", "snapshot-4")
	raw, err := os.ReadFile(p4)
	if err != nil {
		t.Fatal(err)
	}
	var s4 map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&s4); err != nil {
		t.Fatal(err)
	}
	s4["baseManifestList"] = s4["deltaManifestList"]
	delete(s4, "baseManifestListSize")
	if raw, err = json.Marshal(s4); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p4, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	wantRef(t, p, id, r, true, "a file only the snapshots written after a rollback hold")
	sameAsWalk(t, p, id, dir)
}

// TestCheckUnreferencedExpiry: the index answers as the full walk does
// when snapshots expire (a file only they held is unreferenced again)
// and when a tag appears and goes.
func TestCheckUnreferencedExpiry(t *testing.T) {
	p, id, dir := refTable(t)
	r := stage(t, p, id, 0, 5)
	commitStaged(t, p, id, r) // 1
	snap1, err := os.ReadFile(filepath.Join(dir, "snapshot", "snapshot-1"))
	if err != nil {
		t.Fatal(err)
	}
	commitRows(t, p, id, 100, 5, true) // 2 deletes r's file
	commitRows(t, p, id, 200, 5, true) // 3 deletes that one
	wantRef(t, p, id, r, true, "a file older snapshots hold")
	sameAsWalk(t, p, id, dir)
	// Expire 1 and 2, and compact 3's base as in TestCheckUnreferencedTags.
	for _, n := range []string{"snapshot-1", "snapshot-2"} {
		if err := os.Remove(filepath.Join(dir, "snapshot", n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot", hintEarliest), []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	p3 := filepath.Join(dir, "snapshot", "snapshot-3")
	raw, err := os.ReadFile(p3)
	if err != nil {
		t.Fatal(err)
	}
	var s3 map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&s3); err != nil {
		t.Fatal(err)
	}
	s3["baseManifestList"] = s3["deltaManifestList"]
	delete(s3, "baseManifestListSize")
	if raw, err = json.Marshal(s3); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p3, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	wantRef(t, p, id, r, false, "a file only expired snapshots held")
	sameAsWalk(t, p, id, dir)
	if err := os.MkdirAll(filepath.Join(dir, "tag"), 0o755); err != nil {
		t.Fatal(err)
	}
	tag := filepath.Join(dir, "tag", "tag-first")
	if err := os.WriteFile(tag, snap1, 0o644); err != nil {
		t.Fatal(err)
	}
	wantRef(t, p, id, r, true, "a file a tag holds")
	sameAsWalk(t, p, id, dir)
	if err := os.Remove(tag); err != nil {
		t.Fatal(err)
	}
	wantRef(t, p, id, r, false, "a file a deleted tag held")
}
