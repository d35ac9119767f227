package paimon_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// jdbcProps are the properties of a catalog "lake" with Paimon's JDBC
// metastore at uri over the warehouse wh, the lock on and quick to retry.
func jdbcProps(wh, uri, key string) map[string]string {
	return map[string]string{
		paimon.PropWarehouse: wh, paimon.PropCreateNamespaces: "default",
		paimon.PropMetastore: paimon.MetastoreJDBC, paimon.PropURI: uri, paimon.PropCatalogKey: key,
		paimon.PropLockEnabled: "true", paimon.PropLockCheckMaxSleep: "20 ms",
		lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20",
	}
}

// openSQLite opens a JDBC catalog on a fresh SQLite database (outside the
// warehouse, so that the suite's file counts see only the warehouse).
func openSQLite(t testing.TB, extra map[string]string) (p *paimon.Provider, wh, dbPath string) {
	t.Helper()
	dir := t.TempDir()
	wh, dbPath = filepath.Join(dir, "wh"), filepath.Join(dir, "paimon.db")
	props := jdbcProps(wh, "jdbc:sqlite:"+dbPath, "jdbc")
	for k, v := range extra {
		props[k] = v
	}
	p, err := paimon.Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, wh, dbPath
}

func TestConformanceJDBCSQLite(t *testing.T) {
	cfg := conformance()
	cfg.PlainPlans = true
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		p, wh, _ := openSQLite(t, nil)
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
		}
	}}, cfg)
}

// TestConformanceJDBCS3 runs the suite with the JDBC metastore over a
// warehouse on the in-process S3 server, where lock.enabled is on by
// default (Paimon's default on object stores).
func TestConformanceJDBCS3(t *testing.T) {
	s3 := newFakeS3(t)
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		prefix := fmt.Sprintf("wh-%d", s3.n.Add(1))
		props := s3.props(prefix)
		props[paimon.PropMetastore] = paimon.MetastoreJDBC
		props[paimon.PropURI] = "sqlite:///" + filepath.Join(t.TempDir(), "paimon.db")
		props[paimon.PropLockCheckMaxSleep] = "20 ms"
		p, err := paimon.Open(context.Background(), "lake", props)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return s3.list(prefix + "/") },
		}
	}}, conformance())
}

// TestConformanceJDBCPostgres runs the suite with the metastore on the
// PostgreSQL of FLIGHTGW_PAIMON_PG_URI (make paimon-jdbc-postgres-check
// starts a throwaway one); every subtest has its own catalog-key.
func TestConformanceJDBCPostgres(t *testing.T) {
	uri := os.Getenv("FLIGHTGW_PAIMON_PG_URI")
	if uri == "" {
		t.Skip("FLIGHTGW_PAIMON_PG_URI not set (make paimon-jdbc-postgres-check)")
	}
	var n atomic.Int64
	run := time.Now().UnixNano()
	cfg := conformance()
	cfg.PlainPlans = true
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		wh := t.TempDir()
		p, err := paimon.Open(context.Background(), "lake", jdbcProps(wh, uri, fmt.Sprintf("t%d-%d", run, n.Add(1))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
		}
	}}, cfg)
}

func sqliteDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqliteshim", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func queryRows(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestJDBCRows checks the rows the gateway writes, column by column, as
// Paimon Java's JdbcCatalog writes them: the database's exists and
// location properties, the table's row and its synced properties, and
// that a drop deletes the row, the properties and the files.
func TestJDBCRows(t *testing.T) {
	p, wh, dbPath := openSQLite(t, nil)
	db := sqliteDB(t, dbPath)
	ctx := context.Background()
	if got, want := queryRows(t, db, "SELECT catalog_key, database_name, property_key, property_value FROM paimon_database_properties"),
		[]string{"jdbc|default|exists|true", "jdbc|default|location|" + wh + "/default.db"}; !slices.Equal(got, want) {
		t.Errorf("database properties = %q, want %q", got, want)
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "pk"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"primary-key": "id", "bucket": "2"}); err != nil {
		t.Fatal(err)
	}
	if got, want := queryRows(t, db, "SELECT * FROM paimon_tables"), []string{"jdbc|default|pk"}; !slices.Equal(got, want) {
		t.Errorf("paimon_tables = %q, want %q", got, want)
	}
	props := queryRows(t, db, "SELECT property_key, property_value FROM paimon_table_properties WHERE catalog_key = 'jdbc' AND database_name = 'default' AND table_name = 'pk'")
	for _, want := range []string{"bucket|2", "primary-key|id", "bucket-key|id"} {
		if !slices.Contains(props, want) {
			t.Errorf("table properties %q lack %q", props, want)
		}
	}
	if locks := queryRows(t, db, "SELECT lock_id FROM paimon_distributed_locks"); len(locks) != 0 {
		t.Errorf("locks left after create: %q", locks)
	}
	if err := p.DropTable(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := queryRows(t, db, "SELECT * FROM paimon_tables"); len(got) != 0 {
		t.Errorf("paimon_tables after drop = %q", got)
	}
	if got := queryRows(t, db, "SELECT * FROM paimon_table_properties"); len(got) != 0 {
		t.Errorf("paimon_table_properties after drop = %q", got)
	}
	if _, err := os.Stat(filepath.Join(wh, "default.db", "pk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("table directory after drop: %v", err)
	}
}

// TestJDBCRowDecides: with the JDBC metastore a table is its row. A
// table directory without a row (a filesystem catalog's table in the
// same warehouse) is not found, not listed and cannot be written; a row
// another client inserted for an existing directory makes it a table.
func TestJDBCRowDecides(t *testing.T) {
	dir := t.TempDir()
	wh, dbPath := filepath.Join(dir, "wh"), filepath.Join(dir, "paimon.db")
	fsCat, err := paimon.Open(context.Background(), "lake", map[string]string{paimon.PropWarehouse: wh, paimon.PropCreateNamespaces: "default"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "fs_only"}
	if _, err := fsCat.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	p, err := paimon.Open(ctx, "lake", jdbcProps(wh, "jdbc:sqlite:"+dbPath, "jdbc"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.GetTableSpec(ctx, id); !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("GetTableSpec(unregistered) = %v, want ErrNotFound", err)
	}
	b := catalogtest.Batch(0, 3)
	defer b.Release()
	if _, err := p.WriteBatch(ctx, id, b); !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("WriteBatch(unregistered) = %v, want ErrNotFound", err)
	}
	if ts, err := p.ListTables(ctx, []string{"default"}); err != nil || len(ts) != 0 {
		t.Errorf("ListTables = %v, %v; want none", ts, err)
	}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); !errors.Is(err, catalogs.ErrAlreadyExists) {
		t.Errorf("CreateTable over an existing directory = %v, want ErrAlreadyExists", err)
	}
	db := sqliteDB(t, dbPath)
	if _, err := db.Exec("INSERT INTO paimon_tables (catalog_key, database_name, table_name) VALUES ('jdbc', 'default', 'fs_only')"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.GetTableSpec(ctx, id); err != nil {
		t.Errorf("GetTableSpec(registered by another client) = %v", err)
	}
	if ts, err := p.ListTables(ctx, []string{"default"}); err != nil || len(ts) != 1 || ts[0].Name != "fs_only" {
		t.Errorf("ListTables = %v, %v; want fs_only", ts, err)
	}
}

// TestJDBCCatalogKeys: two catalogs with their own catalog-key on one
// database and one warehouse see only their own databases and tables.
func TestJDBCCatalogKeys(t *testing.T) {
	dir := t.TempDir()
	uri := "jdbc:sqlite:" + filepath.Join(dir, "paimon.db")
	ctx := context.Background()
	a, err := paimon.Open(ctx, "lake", jdbcProps(filepath.Join(dir, "a"), uri, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	props := jdbcProps(filepath.Join(dir, "b"), uri, "b")
	props[paimon.PropCreateNamespaces] = "other"
	b, err := paimon.Open(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.CreateTable(ctx, catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	if ns, err := b.ListNamespaces(ctx); err != nil || len(ns) != 1 || ns[0][0] != "other" {
		t.Errorf("b.ListNamespaces = %v, %v; want [other]", ns, err)
	}
	if ts, err := b.ListTables(ctx, []string{"default"}); err != nil || len(ts) != 0 {
		t.Errorf("b.ListTables(default) = %v, %v; want none", ts, err)
	}
	if _, err := b.CreateTable(ctx, catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}, catalogtest.Schema, nil); !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("b.CreateTable in a's database = %v, want ErrNotFound (no database default under key b)", err)
	}
}

// TestJDBCLockHeld: a lock row another holder inserted (as Paimon Java's
// JdbcCatalogLock does around its commit) holds the gateway's commit
// until it is deleted; the commit then lands and releases its own lock.
func TestJDBCLockHeld(t *testing.T) {
	p, _, dbPath := openSQLite(t, nil)
	db := sqliteDB(t, dbPath)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "locked"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 3)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES ('jdbc.default.locked', 480)"); err != nil {
		t.Fatal(err)
	}
	const hold = 400 * time.Millisecond
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(hold)
		if _, err := db.Exec("DELETE FROM paimon_distributed_locks WHERE lock_id = 'jdbc.default.locked'"); err != nil {
			t.Error(err)
		}
	})
	start := time.Now()
	out, err := p.CommitOnce(ctx, id, "held", []catalogs.WriteReceipt{r})
	took := time.Since(start)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if took < hold || out.SnapshotID != 1 {
		t.Errorf("commit took %s (lock held %s), snapshot %d; want it to wait for the lock and land snapshot 1", took, hold, out.SnapshotID)
	}
	if locks := queryRows(t, db, "SELECT lock_id FROM paimon_distributed_locks"); len(locks) != 0 {
		t.Errorf("locks left after commit: %q", locks)
	}
}

// TestJDBCLockExpiry: a lock row older than its expire_time_seconds is
// an abandoned holder's and is cleared; a live one past
// lock-acquire-timeout fails the commit with ErrConflict and lands
// nothing.
func TestJDBCLockExpiry(t *testing.T) {
	p, _, dbPath := openSQLite(t, map[string]string{paimon.PropLockAcquireTimeout: "300 ms"})
	db := sqliteDB(t, dbPath)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "exp"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	commit := func(cid string) (catalogs.CommitOutcome, error) {
		b := catalogtest.Batch(0, 2)
		defer b.Release()
		r, err := p.WriteBatch(ctx, id, b)
		if err != nil {
			t.Fatal(err)
		}
		return p.CommitOnce(ctx, id, cid, []catalogs.WriteReceipt{r})
	}
	if _, err := db.Exec("INSERT INTO paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds) VALUES ('jdbc.default.exp', datetime('now', '-1 hour'), 60)"); err != nil {
		t.Fatal(err)
	}
	if out, err := commit("after-expired"); err != nil || out.SnapshotID != 1 {
		t.Fatalf("commit past an expired lock = %+v, %v; want snapshot 1", out, err)
	}
	if _, err := db.Exec("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES ('jdbc.default.exp', 3600)"); err != nil {
		t.Fatal(err)
	}
	if _, err := commit("while-held"); !errors.Is(err, catalogs.ErrConflict) || !strings.Contains(err.Error(), "jdbc.default.exp") {
		t.Errorf("commit while the lock is held = %v, want ErrConflict naming the lock", err)
	}
	if spec, err := p.GetTableSpec(ctx, id); err != nil || *spec.CurrentSnapshotID != 1 {
		t.Errorf("after the refused commit: %v, snapshot %v; want snapshot 1", err, spec.CurrentSnapshotID)
	}
}

// TestJDBCLockLeftByKilledHolder: the row a holder killed inside its
// commit leaves (acquired just now, expire_time_seconds its
// lock-acquire-timeout) does not fail the next commit that starts at
// once: it waits until the row counts as abandoned (older, in whole
// seconds, than its expire_time_seconds), clears it and lands. Before,
// the waiter gave up at lock-acquire-timeout, a second short of it.
func TestJDBCLockLeftByKilledHolder(t *testing.T) {
	p, _, dbPath := openSQLite(t, map[string]string{paimon.PropLockAcquireTimeout: "1 s"})
	db := sqliteDB(t, dbPath)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "killed"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 2)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES ('jdbc.default.killed', 1)"); err != nil {
		t.Fatal(err)
	}
	if out, err := p.CommitOnce(ctx, id, "after-kill", []catalogs.WriteReceipt{r}); err != nil || out.SnapshotID != 1 {
		t.Fatalf("commit after a killed holder's lock row = %+v, %v; want snapshot 1", out, err)
	}
	if locks := queryRows(t, db, "SELECT lock_id FROM paimon_distributed_locks"); len(locks) != 0 {
		t.Errorf("locks left: %q", locks)
	}
}

// TestJDBCConfig: what the metastore's properties refuse, each naming the
// property.
func TestJDBCConfig(t *testing.T) {
	wh := t.TempDir()
	lite := "jdbc:sqlite:" + filepath.Join(wh, "x.db")
	cases := []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{paimon.PropMetastore: "hive"}, paimon.PropMetastore},
		{map[string]string{paimon.PropMetastore: "jdbc"}, paimon.PropURI},
		{map[string]string{paimon.PropURI: lite}, paimon.PropURI},
		{map[string]string{paimon.PropLockEnabled: "true"}, paimon.PropLockEnabled},
		{map[string]string{paimon.PropMetastore: "jdbc", paimon.PropURI: "mysql://u:secret@h/db"}, paimon.PropURI},
		{map[string]string{paimon.PropMetastore: "jdbc", paimon.PropURI: "jdbc:sqlite:relative.db"}, paimon.PropURI},
		{map[string]string{paimon.PropMetastore: "jdbc", paimon.PropURI: "jdbc:postgresql://h"}, paimon.PropURI},
		{map[string]string{paimon.PropMetastore: "jdbc", paimon.PropURI: lite, paimon.PropLockAcquireTimeout: "soon"}, paimon.PropLockAcquireTimeout},
		{map[string]string{paimon.PropMetastore: "jdbc", paimon.PropURI: lite, paimon.PropLockEnabled: "yes please"}, paimon.PropLockEnabled},
		{map[string]string{paimon.PropMetastore: "jdbc", paimon.PropURI: lite, paimon.PropCatalogKey: ""}, paimon.PropCatalogKey},
		{map[string]string{paimon.PropMetastore: "jdbc", paimon.PropURI: lite, paimon.PropClientPoolSize: "0"}, paimon.PropClientPoolSize},
		{map[string]string{paimon.PropMetastore: "jdbc", "catalog-type": "filesystem", paimon.PropURI: lite}, "catalog-type"},
	}
	for _, c := range cases {
		c.props[paimon.PropWarehouse] = wh
		_, err := paimon.Open(context.Background(), "lake", c.props)
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.key)) {
			t.Errorf("Open(%v) = %v, want ErrInvalidArgument naming %q", c.props, err, c.key)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%v): the error %q shows the password", c.props, err)
		}
	}
}

// TestJDBCUnreachable: a metastore that cannot be reached is
// ErrUnavailable (the service's fault, not the client's), through the
// bounded retry, without the password in the message.
func TestJDBCUnreachable(t *testing.T) {
	props := jdbcProps(t.TempDir(), "postgres://flightgw:hunter2@127.0.0.1:1/paimon?sslmode=disable", "jdbc")
	props[lake.PropRemoteTimeout] = "500"
	start := time.Now()
	_, err := paimon.Open(context.Background(), "lake", props)
	if !errors.Is(err, catalogs.ErrUnavailable) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open(unreachable metastore) = %v, want ErrUnavailable without the password", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Open took %s", d)
	}
}
