package paimon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestCheckUnreferencedTags: a file whose snapshots expired (as Paimon
// Java's expiry deletes them, and its manifests are compacted) but that a
// tag still holds (tag/tag-<name>, a copy of the snapshot) is referenced:
// AbortMessages must not delete it, or the tag's readers break. Before
// the tags were read, only present snapshots counted.
func TestCheckUnreferencedTags(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "tagged"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
	_, v, payload := stagePayload(t, p, id, 0, 10)
	rs1, err := p.DecodePayload(ctx, id, v, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(ctx, id, "c1", rs1); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "default.db", "tagged")
	snap1, err := os.ReadFile(filepath.Join(dir, "snapshot", "snapshot-1"))
	if err != nil {
		t.Fatal(err)
	}
	// Replace the data twice, then expire snapshots 1 and 2.
	for i, cid := range []string{"c2", "c3"} {
		rs, _, _ := stagePayload(t, p, id, 100*(i+1), 5)
		if _, err := p.CommitOverwrite(ctx, id, cid, rs); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"snapshot-1", "snapshot-2"} {
		if err := os.Remove(filepath.Join(dir, "snapshot", n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot", "EARLIEST"), []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A Java writer compacts manifests: snapshot 3's base no longer lists
	// the manifests of snapshots 1 and 2 (here: its base is its delta, the
	// overwrite that holds only the live file).
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
	if err := p.CheckUnreferenced(ctx, id, rs1); err != nil {
		t.Fatalf("a file no present snapshot holds: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tag"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tag", "tag-before"), snap1, 0o644); err != nil {
		t.Fatal(err)
	}
	err = p.CheckUnreferenced(ctx, id, rs1)
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "referenced") {
		t.Fatalf("a file a tag holds: %v, want FailedPrecondition", err)
	}
}
