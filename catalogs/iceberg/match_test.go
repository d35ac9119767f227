package iceberg

import (
	"context"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestMatchCommit: a commit id matches exactly the files it landed with:
// the files a snapshot of one commit added, all of them; in a snapshot
// that merged several commits (group commit), files among the snapshot's
// whose rows are the rows recorded for the id. Other files, more or
// fewer, do not match; an id that never landed is not landed.
func TestMatchCommit(t *testing.T) {
	p, id, release, rounds := held(t)
	defer release()
	ctx := context.Background()
	first := []catalogs.WriteReceipt{stageIn(t, p, id, 0, 1), stageIn(t, p, id, 1, 4)}
	done := goCommit(func() (catalogs.CommitOutcome, error) { return p.CommitOnce(ctx, id, "first", first) })
	_ = nextRound(t, rounds)
	a, b := stageIn(t, p, id, 10, 2), stageIn(t, p, id, 20, 3)
	var merged []chan result
	for i, r := range []catalogs.WriteReceipt{a, b} {
		merged = append(merged, goCommit(func() (catalogs.CommitOutcome, error) {
			return p.CommitOnce(ctx, id, []string{"a", "b"}[i], []catalogs.WriteReceipt{r})
		}))
		waitQueued(t, p, id, i+1)
	}
	release()
	for _, c := range append(merged, done) {
		if r := recv(t, c); r.err != nil {
			t.Fatal(r.err)
		}
	}
	if got := nextRound(t, rounds); len(got) != 2 {
		t.Fatalf("round %v, want a and b merged", got)
	}
	never := stageIn(t, p, id, 30, 6)
	for _, c := range []struct {
		name, id     string
		receipts     []catalogs.WriteReceipt
		landed, same bool
		rows         uint64
	}{
		{"its files", "first", first, true, true, 5},
		{"fewer files", "first", first[:1], true, false, 5},
		{"other files", "first", []catalogs.WriteReceipt{never}, true, false, 5},
		{"more files", "first", append([]catalogs.WriteReceipt{never}, first...), true, false, 5},
		{"merged: its files", "a", []catalogs.WriteReceipt{a}, true, true, 2},
		{"merged: another member's files", "a", []catalogs.WriteReceipt{b}, true, false, 2},
		{"merged: its and another's", "a", []catalogs.WriteReceipt{a, b}, true, false, 2},
		{"merged: files not in the snapshot", "b", []catalogs.WriteReceipt{never}, true, false, 3},
		{"never landed", "c", []catalogs.WriteReceipt{never}, false, false, 0},
	} {
		rec, landed, same, err := p.MatchCommit(ctx, id, c.id, c.receipts)
		if err != nil || landed != c.landed || same != c.same || rec.RowCount != c.rows {
			t.Errorf("%s: MatchCommit(%s) = %+v, landed %v, same %v, %v; want landed %v, same %v, %d rows",
				c.name, c.id, rec, landed, same, err, c.landed, c.same, c.rows)
		}
	}
}
