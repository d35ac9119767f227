package paimon

import (
	"context"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// TestCompactConflict: a compaction that rewrote a bucket's newer file
// meets an older file of that bucket (lower sequence numbers) committed
// meanwhile. Under deduplicate without dropped deletions the two merge as
// before, and the commit goes on; when the order matters (partial-update,
// aggregation, or a file that may hold deletions) it gives up naming the
// file; a rewritten file no longer live is always a conflict.
func TestCompactConflict(t *testing.T) {
	ctx := context.Background()
	p := mergeCatalog(t, nil)
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "cc"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"primary-key": "id", "bucket": "1"}); err != nil {
		t.Fatal(err)
	}
	for i := range int64(2) {
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{stage(t, p, id, i*10, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	live, err := p.liveFiles(ctx, id, st.dir, st.snap)
	if err != nil || len(live) != 2 {
		t.Fatalf("live files %v, %v", live, err)
	}
	older, newer := live[0], live[1]
	if older.file.MaxSequenceNumber >= newer.file.MinSequenceNumber {
		t.Fatalf("sequence numbers %d..%d, %d..%d: want the second file after the first", older.file.MinSequenceNumber,
			older.file.MaxSequenceNumber, newer.file.MinSequenceNumber, newer.file.MaxSequenceNumber)
	}
	u := compactUnit{partition: newer.partition, bucket: newer.bucket}
	committer := func(orderFree bool, input entry) *compactCommitter {
		input.kind = fileDelete
		return &compactCommitter{p: p, t: id, schemaID: st.schema.ID, pk: true, orderFree: orderFree, inputs: []entry{input},
			maxSeq: map[string]int64{u.key(): input.file.MaxSequenceNumber}, buckets: map[string]bool{u.key(): true}}
	}
	for _, c := range []struct {
		name      string
		orderFree bool
		input     entry
		want      string // in the reason; "" for no conflict
	}{
		{"deduplicate", true, newer, ""},
		{"order matters", false, newer, older.file.FileName + " committed meanwhile"},
		{"input gone", true, func() entry { e := newer; e.file.FileName = "data-gone.parquet"; return e }(), "data-gone.parquet it rewrites was deleted"},
	} {
		reason, err := committer(c.orderFree, c.input).conflict(ctx, st)
		if err != nil || (c.want == "") != (reason == "") || !strings.Contains(reason, c.want) {
			t.Errorf("%s: conflict %q, %v; want %q", c.name, reason, err, c.want)
		}
	}
}
