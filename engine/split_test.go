//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// snapScanner is a planScanner whose plans carry a snapshot and file
// sizes, as Iceberg's do; it records the snapshots it was asked for.
type snapScanner struct {
	*planScanner
	mu    sync.Mutex
	asked []*int64
}

func (s *snapScanner) PlanFiles(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.FilePlan, error) {
	fp, err := s.planScanner.PlanFiles(ctx, t, req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.asked = append(s.asked, req.SnapshotID)
	s.mu.Unlock()
	snap := int64(42)
	fp.SnapshotID = &snap
	for _, f := range fp.Files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		fp.FileBytes = append(fp.FileBytes, st.Size())
	}
	return fp, nil
}

// TestSplitParts: a query that filters and projects one plain table is
// split into one part per file (at most MaxParts); the parts' rows are
// the query's rows, each part reading its own file at the split's
// snapshot.
func TestSplitParts(t *testing.T) {
	f := newNativeFixture(t)
	sc := &snapScanner{planScanner: f.plain}
	const q = `SELECT id, amount * 2 AS twice, upper(region) AS r FROM sales WHERE id > 1`
	whole, err := f.run(t, sc, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := f.eng.Split(context.Background(), q, nil, f.resolver(sc), SplitOptions{MaxParts: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2 (one per file)", len(parts))
	}
	var got []string
	for _, p := range parts {
		if p.Count != 2 || p.Snapshot != 42 {
			t.Fatalf("part %+v", p)
		}
		r, err := f.eng.QueryPart(context.Background(), q, nil, f.resolver(sc), p)
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Scans(); len(s) != 1 || !s[0].Native || s[0].FilesPlanned != 1 {
			t.Errorf("part %d scans %+v", p.Index, s)
		}
		if !r.Schema().Equal(whole.schema) {
			t.Errorf("part %d schema %s, want %s", p.Index, r.Schema(), whole.schema)
		}
		for r.Next() {
			got = append(got, render(r.RecordBatch())...)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	want := slices.Clone(whole.rows)
	slices.Sort(want)
	slices.Sort(got)
	if len(want) != 3 || !slices.Equal(got, want) {
		t.Errorf("parts read %q, the query %q", got, want)
	}
	var pinned int
	for _, s := range sc.asked {
		if s != nil && *s == 42 {
			pinned++
		}
	}
	if pinned != 2 {
		t.Errorf("%d part plans at the split's snapshot, want 2", pinned)
	}

	if one, err := f.eng.Split(context.Background(), q, nil, f.resolver(sc), SplitOptions{MaxParts: 1}); err != nil || one != nil {
		t.Errorf("MaxParts 1: %v %v", one, err)
	}
	if small, err := f.eng.Split(context.Background(), q, nil, f.resolver(sc), SplitOptions{MaxParts: 8, MinBytes: 1 << 40}); err != nil || small != nil {
		t.Errorf("under MinBytes: %v %v", small, err)
	}
}

// TestSplitRefuses: anything but filtering and projecting one plain table
// is read whole.
func TestSplitRefuses(t *testing.T) {
	f := newNativeFixture(t)
	sc := &snapScanner{planScanner: f.plain}
	for _, q := range []string{
		`SELECT count(*) FROM sales`,
		`SELECT region, sum(amount) FROM sales GROUP BY region`,
		`SELECT DISTINCT region FROM sales`,
		`SELECT * FROM sales ORDER BY id`,
		`SELECT * FROM sales LIMIT 2`,
		`SELECT * FROM sales OFFSET 1`,
		`SELECT s.id, r.manager FROM sales s JOIN regions r ON s.region = r.region`,
		`SELECT id, (SELECT max(id) FROM sales) FROM sales`,
		`SELECT id, row_number() OVER () FROM sales`,
		`SELECT id, sum(amount) OVER (PARTITION BY region) FROM sales`,
		`SELECT unnest([id, id]) FROM sales`,
		`SELECT id FROM sales UNION ALL SELECT id FROM sales`,
		`SELECT id FROM sales WHERE id IN (SELECT qty FROM sales)`,
		`SELECT * FROM sales USING SAMPLE 50%`,
		`SELECT 1`,
	} {
		parts, err := f.eng.Split(context.Background(), q, nil, f.resolver(sc), SplitOptions{MaxParts: 8})
		if err != nil || parts != nil {
			t.Errorf("%s: split into %d parts (%v)", q, len(parts), err)
		}
	}
	// A plan that is not plain is not split, and a part of it cannot run.
	unplain := &snapScanner{planScanner: f.unplain}
	const q = `SELECT id FROM sales`
	if parts, err := f.eng.Split(context.Background(), q, nil, f.resolver(unplain), SplitOptions{MaxParts: 8}); err != nil || parts != nil {
		t.Errorf("not plain: split into %d parts (%v)", len(parts), err)
	}
	_, err := f.eng.QueryPart(context.Background(), q, nil, f.resolver(unplain), Part{Index: 0, Count: 2, Snapshot: 42})
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "run the query again") {
		t.Errorf("part of a plan no longer plain: %v", err)
	}
	_, err = f.eng.QueryPart(context.Background(), q, nil, f.resolver(sc), Part{Index: 2, Count: 2, Snapshot: 42})
	if !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("part 2 of 2: %v", err)
	}
}

// TestPartFiles: the shares are a partition of the files, the same every
// time, and balanced by size.
func TestPartFiles(t *testing.T) {
	files := []string{"/w/a", "/w/b", "/w/c", "/w/d", "/w/e"}
	sizes := []int64{100, 60, 50, 40, 10}
	var all []string
	loads := make([]int64, 2)
	for i := range 2 {
		share := partFiles(files, sizes, 2, i)
		if !slices.Equal(share, partFiles(files, sizes, 2, i)) {
			t.Fatal("shares differ between calls")
		}
		for _, f := range share {
			loads[i] += sizes[slices.Index(files, f)]
		}
		all = append(all, share...)
	}
	slices.Sort(all)
	if !slices.Equal(all, files) {
		t.Fatalf("shares %v are not a partition of %v", all, files)
	}
	// Largest first to the lighter part: 100, 60+50+10 is 140 and 120.
	if loads[0] != 140 || loads[1] != 120 {
		t.Errorf("loads %v, want 140 and 120", loads)
	}
	for i := range 3 {
		if share := partFiles(files[:3], nil, 3, i); len(share) != 1 {
			t.Errorf("3 files of unknown size in 3 parts: part %d has %v", i, share)
		}
	}
}
