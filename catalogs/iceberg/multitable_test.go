package iceberg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// TestSQLCatalogHasNoMultiTableCommit: the SQL catalog cannot commit
// several tables atomically, so the registry's provider does not offer it.
func TestSQLCatalogHasNoMultiTableCommit(t *testing.T) {
	props, err := EmbeddedProperties(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := catalogs.Open(context.Background(), Type, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer p.(catalogs.Closer).Close()
	if _, ok := p.(catalogs.MultiTableCommitter); ok {
		t.Errorf("%T on a SQL catalog implements MultiTableCommitter", p)
	}
	if _, ok := p.(catalogs.SchemaReplacer); !ok {
		t.Errorf("%T does not implement SchemaReplacer", p)
	}
}

// fakeTxn gives a SQL catalog a CommitTransaction that commits the tables
// one after the other: not atomic, enough to test CommitTables' own rules
// (exactly once, duplicates) where no REST catalog runs.
type fakeTxn struct{ catalog.Catalog }

func (f fakeTxn) CommitTransaction(ctx context.Context, commits []table.TableCommit) error {
	if len(commits) == 0 {
		return catalog.ErrEmptyCommitList
	}
	for _, c := range commits {
		if len(c.Identifier) == 0 {
			return catalog.ErrMissingIdentifier
		}
	}
	for _, c := range commits {
		if _, _, err := f.CommitTable(ctx, c.Identifier, c.Requirements, c.Updates); err != nil {
			return err
		}
	}
	return nil
}

func snapshots(t *testing.T, p *Provider, id catalogs.TableIdent) int {
	t.Helper()
	return len(loadMeta(t, p, id).Snapshots())
}

// multiTables creates two tables with two snapshots each and stages an
// append to the first and a replace with a new schema of the second.
func multiTables(t *testing.T, p *Provider, prefix string) (catalogs.TableIdent, catalogs.TableIdent, []catalogs.TableCommit) {
	t.Helper()
	a := evolveTable(t, p, prefix+"a")
	b := evolveTable(t, p, prefix+"b")
	batch := typedBatch(t, oldSchema, 100, 3)
	defer batch.Release()
	r, err := p.WriteBatch(context.Background(), a, batch)
	if err != nil {
		t.Fatal(err)
	}
	return a, b, []catalogs.TableCommit{
		{Table: a, Mode: catalogs.ModeAppend, Receipts: []catalogs.WriteReceipt{r}},
		{Table: b, Mode: catalogs.ModeOverwrite, Receipts: replaceStream(t, p, b, newSchema, 50, 2)},
	}
}

// testCommitTables checks what CommitTables promises whatever the catalog:
// both tables land with the commit id, a repeat returns the same
// outcomes, other receipts under the same id are a Duplicate, and an id
// landed on some tables only is refused.
func testCommitTables(t *testing.T, r restProvider, prefix string) {
	ctx := context.Background()
	p := r.Provider
	a, b, commits := multiTables(t, p, prefix)
	out, err := r.CommitTables(ctx, "multi-1", commits)
	if err != nil {
		t.Fatalf("CommitTables: %v", err)
	}
	for i, id := range []catalogs.TableIdent{a, b} {
		rec, ok, err := p.FindCommit(ctx, id, "multi-1")
		if err != nil || !ok || rec.Outcome.SnapshotID != out[i].SnapshotID || out[i].Duplicate {
			t.Errorf("table %s: FindCommit = %+v %v %v, CommitTables said %+v", id, rec, ok, err, out[i])
		}
	}
	if got := scanAll(t, p, a, catalogs.ScanRequest{}).rows; got != 11 {
		t.Errorf("table a: %d rows, want 8 + 3 appended", got)
	}
	got := scanAll(t, p, b, catalogs.ScanRequest{})
	wantValues(t, got, "full_name", []string{"full_name-50", "full_name-51"})
	if n := snapshots(t, p, b); n != 3 {
		t.Errorf("table b: %d snapshots, want its 2 and the replace", n)
	}

	// The same commit again (a lost reply): the same outcomes, nothing new.
	again, err := r.CommitTables(ctx, "multi-1", commits)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(out) || again[0].Duplicate || again[1].Duplicate {
		t.Errorf("repeated CommitTables = %+v, %v; want %+v", again, err, out)
	}
	// Other receipts under the same id: a duplicate, nothing appended.
	_, _, others := multiTables(t, p, prefix+"x")
	others[0].Table, others[1].Table = a, b
	for i := range others {
		for j := range others[i].Receipts {
			others[i].Receipts[j].Metadata = []byte(strings.ReplaceAll(string(others[i].Receipts[j].Metadata), prefix+"x", prefix))
		}
	}
	dup, err := r.CommitTables(ctx, "multi-1", others)
	if err != nil || !dup[0].Duplicate || dup[0].SnapshotID != out[0].SnapshotID {
		t.Errorf("CommitTables with other receipts = %+v, %v; want a duplicate of %+v", dup, err, out)
	}
	if n := snapshots(t, p, a); n != 3 {
		t.Errorf("table a: %d snapshots after the repeats, want 3", n)
	}

	// An id landed on one table only is no atomic commit of both.
	batch := typedBatch(t, oldSchema, 200, 1)
	ra, err := p.WriteBatch(ctx, a, batch)
	batch.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(ctx, a, "partial", []catalogs.WriteReceipt{ra}); err != nil {
		t.Fatal(err)
	}
	rb := replaceStream(t, p, b, oldSchema, 0, 1)
	_, err = r.CommitTables(ctx, "partial", []catalogs.TableCommit{
		{Table: a, Receipts: []catalogs.WriteReceipt{ra}}, {Table: b, Mode: catalogs.ModeOverwrite, Receipts: rb},
	})
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), a.String()) || !strings.Contains(err.Error(), b.String()) {
		t.Errorf("CommitTables of a partly landed id = %v, want ErrFailedPrecondition naming both tables", err)
	}
	_ = p.Discard(ctx, b, rb)

	if _, err := r.CommitTables(ctx, "twice", []catalogs.TableCommit{{Table: a}, {Table: a}}); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("CommitTables naming a table twice = %v, want ErrInvalidArgument", err)
	}
}

func TestCommitTablesRules(t *testing.T) {
	p, _ := openLake(t)
	p.cat = fakeTxn{p.cat}
	r, ok := p.capabilities().(restProvider)
	if !ok {
		t.Fatalf("a catalog with CommitTransaction gives %T", p.capabilities())
	}
	testCommitTables(t, r, "t")
}

// openREST opens the REST catalog that integration/iceberg-rest/run.sh
// starts, through the registry, or skips.
func openREST(t *testing.T, extra map[string]string) (restProvider, string) {
	t.Helper()
	uri := os.Getenv("FLIGHTGW_ICEBERG_REST_URI")
	if uri == "" {
		t.Skip("no REST catalog: run make iceberg-rest-check")
	}
	ns := fmt.Sprintf("multi%d_%s", os.Getpid(), strings.NewReplacer("/", "_", "=", "_").Replace(strings.ToLower(t.Name())))
	props := map[string]string{PropCatalogType: TypeREST, PropURI: uri, PropCreateNamespaces: ns}
	for k, v := range extra {
		props[k] = v
	}
	p, err := catalogs.Open(context.Background(), Type, "rest", props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.(catalogs.Closer).Close() })
	r, ok := p.(restProvider)
	if !ok {
		t.Fatalf("the registry gives %T for a REST catalog, want a MultiTableCommitter", p)
	}
	return r, ns
}

// racingTxn runs before once, just ahead of the first CommitTransaction.
type racingTxn struct {
	catalog.Catalog
	once   sync.Once
	before func()
}

func (c *racingTxn) CommitTransaction(ctx context.Context, commits []table.TableCommit) error {
	c.once.Do(c.before)
	return c.Catalog.(catalog.TransactionalCatalog).CommitTransaction(ctx, commits)
}

// restTable creates a table like evolveTable in namespace ns.
func restTable(t *testing.T, p *Provider, ns, name string) catalogs.TableIdent {
	t.Helper()
	id := catalogs.TableIdent{Catalog: "rest", Namespace: []string{ns}, Name: name}
	if _, err := p.CreateTable(context.Background(), id, oldSchema, nil); err != nil {
		t.Fatal(err)
	}
	commitBatch(t, p, id, oldSchema, 0, 4)
	commitBatch(t, p, id, oldSchema, 4, 4)
	return id
}

// TestRESTCommitTables commits two tables atomically on Iceberg's own REST
// catalog (run by integration/iceberg-rest/run.sh): an append to one and
// a replace with a new schema of the other, in one CommitTransaction.
func TestRESTCommitTables(t *testing.T) {
	r, ns := openREST(t, nil)
	ctx := context.Background()
	p := r.Provider
	a, b := restTable(t, p, ns, "a"), restTable(t, p, ns, "b")
	batch := typedBatch(t, oldSchema, 100, 3)
	ra, err := p.WriteBatch(ctx, a, batch)
	batch.Release()
	if err != nil {
		t.Fatal(err)
	}
	commits := []catalogs.TableCommit{
		{Table: a, Mode: catalogs.ModeAppend, Receipts: []catalogs.WriteReceipt{ra}},
		{Table: b, Mode: catalogs.ModeOverwrite, Receipts: replaceStream(t, p, b, newSchema, 50, 2)},
	}
	uuidB := loadMeta(t, p, b).TableUUID()
	out, err := r.CommitTables(ctx, "rest-multi", commits)
	if err != nil {
		t.Fatalf("CommitTables: %v", err)
	}
	for i, id := range []catalogs.TableIdent{a, b} {
		if rec, ok, err := p.FindCommit(ctx, id, "rest-multi"); err != nil || !ok || rec.Outcome.SnapshotID != out[i].SnapshotID {
			t.Errorf("table %s: FindCommit = %+v %v %v, CommitTables said %+v", id, rec, ok, err, out[i])
		}
	}
	mb := loadMeta(t, p, b)
	if mb.TableUUID() != uuidB || len(mb.Snapshots()) != 3 || columnNamesOf(mb.CurrentSchema()) != "id,full_name,score,added" {
		t.Errorf("table b: uuid %s (was %s), %d snapshots, schema %s", mb.TableUUID(), uuidB, len(mb.Snapshots()), columnNamesOf(mb.CurrentSchema()))
	}
	wantValues(t, scanAll(t, p, b, catalogs.ScanRequest{}), "id", []string{"50", "51"})
	again, err := r.CommitTables(ctx, "rest-multi", commits)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(out) {
		t.Errorf("repeated CommitTables = %+v, %v; want %+v", again, err, out)
	}
}

// TestRESTCommitTablesAtomic: a commit to the second table landing between
// load and commit makes the catalog refuse the whole transaction, and the
// first table is unchanged; with retries, the commit is retried as a whole.
func TestRESTCommitTablesAtomic(t *testing.T) {
	for _, retries := range []string{"0", "3"} {
		t.Run("retries="+retries, func(t *testing.T) {
			r, ns := openREST(t, map[string]string{lake.PropCommitRetries: retries})
			ctx := context.Background()
			p := r.Provider
			a, b := restTable(t, p, ns, "a"+retries), restTable(t, p, ns, "b"+retries)
			var commits []catalogs.TableCommit
			for _, id := range []catalogs.TableIdent{a, b} {
				batch := typedBatch(t, oldSchema, 100, 2)
				rc, err := p.WriteBatch(ctx, id, batch)
				batch.Release()
				if err != nil {
					t.Fatal(err)
				}
				commits = append(commits, catalogs.TableCommit{Table: id, Receipts: []catalogs.WriteReceipt{rc}})
			}
			before := loadMeta(t, p, a).CurrentSnapshot().SnapshotID
			p.cat = &racingTxn{Catalog: p.cat, before: func() { commitBatch(t, p, b, oldSchema, 500, 1) }}
			out, err := r.CommitTables(ctx, "atomic", commits)
			if retries == "0" {
				if !errors.Is(err, catalogs.ErrConflict) {
					t.Fatalf("CommitTables = %+v, %v; want ErrConflict", out, err)
				}
				if now := loadMeta(t, p, a).CurrentSnapshot().SnapshotID; now != before {
					t.Errorf("table a moved from snapshot %d to %d: the failed transaction was not atomic", before, now)
				}
				if _, ok, _ := p.FindCommit(ctx, a, "atomic"); ok {
					t.Error("table a has the failed commit's id")
				}
				_ = p.Discard(ctx, a, commits[0].Receipts)
				_ = p.Discard(ctx, b, commits[1].Receipts)
				return
			}
			if err != nil || out[0].Retried != 1 || out[1].Retried != 1 {
				t.Fatalf("CommitTables = %+v, %v; want both landed after one conflict", out, err)
			}
			if got := scanAll(t, p, b, catalogs.ScanRequest{}).rows; got != 11 {
				t.Errorf("table b: %d rows, want 8 + the racing 1 + 2", got)
			}
		})
	}
}
