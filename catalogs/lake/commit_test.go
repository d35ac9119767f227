package lake_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// fakeTable is a table whose versions are numbers; each attempt loses
// while lose > 0, and another commit that lands meanwhile may add the
// commit's file (claimedAt: the version whose snapshot adds it).
type fakeTable struct {
	version   int
	lose      int
	claimedAt int   // 0: no other commit adds the file
	landedAt  int   // 0: the commit id has not landed
	replyLost bool  // the attempt lands but answers an error
	bases     []int // the base of every Claimed call after a lost race
	attempts  int
}

func (f *fakeTable) Load(context.Context) (int, error) { return f.version, nil }

func (f *fakeTable) Landed(_ context.Context, v int) (bool, error) {
	return f.landedAt != 0 && f.landedAt <= v, nil
}

func (f *fakeTable) Claimed(_ context.Context, base, v int, first bool) (string, int64, error) {
	if !first {
		f.bases = append(f.bases, base)
	}
	if f.claimedAt != 0 && f.claimedAt > base && f.claimedAt <= v {
		return "data-1.parquet", int64(f.claimedAt), nil
	}
	return "", 0, nil
}

func (f *fakeTable) Attempt(context.Context, int) error {
	f.attempts++
	if f.lose > 0 {
		f.lose--
		f.version++ // the commit that won
		return fmt.Errorf("snapshot-%d: %w", f.version, lake.ErrLost)
	}
	f.version++
	if f.replyLost {
		f.landedAt = f.version
		return errors.New("connection reset")
	}
	return nil
}

func (f *fakeTable) Recover(context.Context, error) bool { return f.landedAt != 0 }

// TestRun: the loop's answers. A lost race reloads and checks the versions
// after the losing attempt's base; a file another commit added meanwhile
// is FailedPrecondition naming it and the snapshot; the commit id landed
// ends the loop without an attempt; the retries bound it (ErrConflict); a
// lost reply is recovered; an attempt's own error ends it.
func TestRun(t *testing.T) {
	fast := lake.Retry{Retries: 3, MinWait: time.Millisecond, MaxWait: 2 * time.Millisecond, TotalTimeout: 10 * time.Second}
	cases := []struct {
		name        string
		table       fakeTable
		wantKind    error
		wantMsg     string
		wantRetried uint32
		wantBases   []int
		attempts    int
	}{
		{name: "first attempt lands", table: fakeTable{}, attempts: 1},
		{name: "two lost races", table: fakeTable{lose: 2}, wantRetried: 2, wantBases: []int{0, 1}, attempts: 3},
		{name: "the winner added the file", table: fakeTable{lose: 1, claimedAt: 1}, wantKind: catalogs.ErrFailedPrecondition,
			wantMsg: "data-1.parquet is already in snapshot 1", wantRetried: 1, wantBases: []int{0}, attempts: 1},
		{name: "landed before", table: fakeTable{version: 4, landedAt: 3}},
		{name: "out of retries", table: fakeTable{lose: 10}, wantKind: catalogs.ErrConflict, wantMsg: "gave up after 4",
			wantRetried: 4, wantBases: []int{0, 1, 2}, attempts: 4},
		{name: "reply lost", table: fakeTable{replyLost: true}, attempts: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.table
			retried, err := lake.Run(context.Background(), fast, "table db.t", "job-1", &f)
			if c.wantKind == nil && err != nil {
				t.Fatalf("Run = %v", err)
			}
			if c.wantKind != nil && (!errors.Is(err, c.wantKind) || !strings.Contains(err.Error(), c.wantMsg) || !strings.Contains(err.Error(), "table db.t")) {
				t.Fatalf("Run = %v, want %v naming %q and the table", err, c.wantKind, c.wantMsg)
			}
			if retried != c.wantRetried || f.attempts != c.attempts || fmt.Sprint(f.bases) != fmt.Sprint(c.wantBases) {
				t.Errorf("retried %d, attempts %d, bases %v; want %d, %d, %v", retried, f.attempts, f.bases, c.wantRetried, c.attempts, c.wantBases)
			}
		})
	}
}

// TestRunTimeout: the total timeout ends a loop that keeps losing.
func TestRunTimeout(t *testing.T) {
	f := fakeTable{lose: 1 << 30}
	r := lake.Retry{Retries: 1 << 30, MinWait: 5 * time.Millisecond, MaxWait: 10 * time.Millisecond, TotalTimeout: 100 * time.Millisecond}
	start := time.Now()
	_, err := lake.Run(context.Background(), r, "table db.t", "job-1", &f)
	if !errors.Is(err, catalogs.ErrConflict) || time.Since(start) > 5*time.Second {
		t.Fatalf("Run = %v after %v, want ErrConflict within the total timeout", err, time.Since(start))
	}
}
