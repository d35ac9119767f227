package iceberg

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// cacheLake opens two providers on one embedded lake (two gateway
// processes, or this one and another engine's SQL catalog) and creates
// the tables named on the first.
func cacheLake(t *testing.T, names ...string) (a, b *Provider, ids []catalogs.TableIdent) {
	t.Helper()
	ctx := context.Background()
	p, props := openLake(t)
	other, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	for _, n := range names {
		id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: n}
		if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return p, other, ids
}

// appendRows commits n rows from from into id through p.
func appendRows(t *testing.T, p *Provider, id catalogs.TableIdent, from, n int64) catalogs.CommitOutcome {
	t.Helper()
	out, err := p.Commit(context.Background(), id, []catalogs.WriteReceipt{stageIn(t, p, id, from, n)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetadataCacheReadsAMetadataFileOnce: after a commit the first load
// reads the new metadata.json and every later use of the unchanged table
// (a query's spec, plan and scan) reads it no more; a commit by another
// writer (a second provider on the lake) is seen by the next load, which
// reads its one new file.
func TestMetadataCacheReadsAMetadataFileOnce(t *testing.T) {
	ctx := context.Background()
	a, b, ids := cacheLake(t, "once")
	id := ids[0]
	appendRows(t, a, id, 0, 10)
	first, err := a.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	reads := a.meta.reads.Load()
	if reads == 0 {
		t.Fatalf("no metadata.json read through the cache after a commit")
	}
	if _, err := a.GetTableSpec(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PlanFiles(ctx, id, catalogs.ScanRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := scanCount(t, a, id); n != 10 {
		t.Fatalf("rows = %d, want 10", n)
	}
	again, err := a.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.meta.reads.Load() - reads; got != 0 || again.MetadataLocation() != first.MetadataLocation() {
		t.Errorf("the unchanged table's spec, plan, scan and load read metadata.json %d times (at %s, first at %s), want 0",
			got, again.MetadataLocation(), first.MetadataLocation())
	}

	out := appendRows(t, b, id, 10, 5) // another writer
	reads = a.meta.reads.Load()
	now, err := a.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s := now.CurrentSnapshot(); s == nil || s.SnapshotID != out.SnapshotID {
		t.Errorf("after the other writer's commit the current snapshot is %v, want %d", s, out.SnapshotID)
	}
	if got := a.meta.reads.Load() - reads; got != 1 {
		t.Errorf("the load after another writer's commit read %d metadata files, want 1", got)
	}
	if n := scanCount(t, a, id); n != 15 {
		t.Errorf("rows after the other writer's commit = %d, want 15", n)
	}
}

// TestMetadataCacheBounds: the least recently used table leaves the cache
// past its entry bound, and a table bigger than the byte bound is never
// kept; with the bound 0 (metadata-cache.max-bytes) loads are
// iceberg-go's own and read nothing through the cache.
func TestMetadataCacheBounds(t *testing.T) {
	ctx := context.Background()
	a, _, ids := cacheLake(t, "one", "two")
	load := func(ids ...catalogs.TableIdent) int64 {
		t.Helper()
		before := a.meta.reads.Load()
		for _, id := range ids {
			if _, err := a.load(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		return a.meta.reads.Load() - before
	}
	one, two := ids[0], ids[1]
	for _, c := range []struct {
		name       string
		bytes      int64
		entries    int
		loads      []catalogs.TableIdent
		wantReads  int64
		wantCached int
	}{
		{"both fit", 1 << 20, 2, []catalogs.TableIdent{one, two, one, two}, 2, 2},
		{"one entry: each evicts the other", 1 << 20, 1, []catalogs.TableIdent{one, two, one, two}, 4, 1},
		{"one entry: the most recent stays", 1 << 20, 1, []catalogs.TableIdent{one, two, two, two}, 2, 1},
		{"byte bound below a file", 16, 8, []catalogs.TableIdent{one, one}, 2, 0},
	} {
		a.meta = newMetaCache(c.bytes, c.entries)
		if got := load(c.loads...); got != c.wantReads || a.meta.order.Len() != c.wantCached {
			t.Errorf("%s: %d reads, %d cached; want %d reads, %d cached", c.name, got, a.meta.order.Len(), c.wantReads, c.wantCached)
		}
		if a.meta.bytes > c.bytes {
			t.Errorf("%s: %d bytes cached, bound %d", c.name, a.meta.bytes, c.bytes)
		}
	}

	props, err := EmbeddedProperties(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	props[PropMetadataCacheBytes] = "0"
	off, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if off.pointers != nil {
		t.Errorf("%s 0: loads still cached", PropMetadataCacheBytes)
	}
}

// TestMetadataCacheLoadsDuringCommits (run with -race): loads, scans and
// commits of two providers on one table at once; every load answers, no
// loader sees the table go back to an older snapshot, and each provider
// sees every row once at the end.
func TestMetadataCacheLoadsDuringCommits(t *testing.T) {
	ctx := context.Background()
	a, b, ids := cacheLake(t, "race")
	id := ids[0]
	const commits, loaders = 6, 4
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, loaders)
	for i := range loaders {
		p := a
		if i%2 == 1 {
			p = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				tbl, err := p.load(ctx, id)
				if err != nil {
					errs <- err
					return
				}
				n := len(tbl.Metadata().Snapshots())
				if n < last {
					errs <- fmt.Errorf("loader %d: %d snapshots after %d", i, n, last)
					return
				}
				last = n
				if _, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range int64(commits) {
		p := a
		if i%2 == 1 {
			p = b
		}
		appendRows(t, p, id, i*10, 10)
	}
	close(done)
	wg.Wait()
	for range loaders {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for i, p := range []*Provider{a, b} {
		if n := scanCount(t, p, id); n != commits*10 {
			t.Errorf("provider %d: rows = %d, want %d", i, n, commits*10)
		}
	}
}

// BenchmarkQueryLoads: a table of 300 small commits loaded for its spec
// (spec), and the loads of one query (its spec twice, then its plan,
// which reads the 300 manifests), with the metadata cache and without
// (metadata-cache.max-bytes 0, iceberg-go's own loads).
func BenchmarkQueryLoads(b *testing.B) {
	ctx := context.Background()
	props, err := EmbeddedProperties(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	p, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "loads"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		b.Fatal(err)
	}
	for i := range int64(300) {
		rec := catalogtest.Batch(i, 1)
		r, err := p.WriteBatch(ctx, id, rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
			b.Fatal(err)
		}
	}
	off := maps.Clone(props)
	off[PropMetadataCacheBytes] = "0"
	uncached, err := Open(ctx, EmbeddedCatalogName, off)
	if err != nil {
		b.Fatal(err)
	}
	defer uncached.Close()
	for _, c := range []struct {
		name string
		p    *Provider
	}{{"cached", p}, {"uncached", uncached}} {
		b.Run("spec/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.p.GetTableSpec(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("query/"+c.name, func(b *testing.B) {
			for b.Loop() {
				for range 2 {
					if _, err := c.p.GetTableSpec(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := c.p.PlanFiles(ctx, id, catalogs.ScanRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMetadataCachePostgres: on PostgreSQL (make iceberg-postgres-check)
// the pointer is read with PostgreSQL's placeholders, and the cache
// answers the unchanged table's second load and sees the next commit.
func TestMetadataCachePostgres(t *testing.T) {
	uri := os.Getenv("FLIGHTGW_ICEBERG_PG_URI")
	if uri == "" {
		t.Skip("no PostgreSQL: run make iceberg-postgres-check")
	}
	ctx := context.Background()
	p, err := Open(ctx, fmt.Sprintf("pgcache%d", os.Getpid()), map[string]string{
		PropCatalogType: TypeSQL, PropURI: uri, PropWarehouse: "file://" + t.TempDir(), PropCreateNamespaces: "default",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.pointers == nil {
		t.Fatal("loads are not cached on PostgreSQL")
	}
	id := catalogs.TableIdent{Catalog: p.name, Namespace: []string{"default"}, Name: "cached"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	out := appendRows(t, p, id, 0, 10)
	for i := range 2 {
		before := p.meta.reads.Load()
		tbl, err := p.load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s := tbl.CurrentSnapshot(); s == nil || s.SnapshotID != out.SnapshotID {
			t.Errorf("load %d: current snapshot %v, want %d", i, s, out.SnapshotID)
		}
		if got := p.meta.reads.Load() - before; i == 1 && got != 0 {
			t.Errorf("the second load read %d metadata files, want 0", got)
		}
	}
}
