package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	icetable "github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/codec/actions"
)

// startMaintainProc starts a gateway process with an Iceberg catalog
// "lake" laid out as startProc's (so that gateway.unreferenced reads it)
// at the default target file size, and a Delta catalog "dl".
func startMaintainProc(t *testing.T, dataDir, minAge string) *gatewayProc {
	t.Helper()
	yaml := fmt.Sprintf(`catalogs:
  - name: lake
    type: iceberg
    properties:
      catalog-type: sql
      uri: sqlite://%[1]s/catalog.db
      warehouse: file://%[1]s/warehouse
      create-namespaces: default
  - name: dl
    type: delta
    properties: {warehouse: "%[1]s/delta", create-namespaces: default}
`, dataDir)
	return startChild(t, dataDir, yaml, "FLIGHTGW_RECLAIM_MIN_AGE="+minAge)
}

// deltaTableDir is the Delta table t of startMaintainProc.
func deltaTableDir(dataDir string) string { return filepath.Join(dataDir, "delta", "default", "t") }

// deltaUnreferenced lists the files of the Delta table t that no log
// version adds, read here from the JSON commits alone: data files (every
// remove is within the default retention of a week, so every file a
// commit added is still referenced) and hidden temporary files of the log.
func deltaUnreferenced(t *testing.T, dataDir string) []string {
	t.Helper()
	dir := deltaTableDir(dataDir)
	ref := map[string]bool{}
	commits, _ := filepath.Glob(filepath.Join(dir, "_delta_log", "*.json"))
	for _, c := range commits {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var a struct {
				Add *struct {
					Path string `json:"path"`
				} `json:"add"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if a.Add != nil {
				p, err := url.PathUnescape(a.Add.Path)
				if err != nil {
					t.Fatal(err)
				}
				ref[p] = true
			}
		}
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		inLog := strings.HasPrefix(rel, "_delta_log/")
		if inLog && strings.HasPrefix(d.Name(), ".") || !inLog && !ref[rel] {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dataFilesUnder is the set of the .parquet files under dir (outside
// _delta_log).
func dataFilesUnder(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") {
			out[p] = true
		}
		return nil
	})
	return out
}

// TestMaintenanceKilled: a gateway process is killed with SIGKILL at
// points of a Delta optimize and of an Iceberg rewrite_data_files and
// rewrite_manifests run through MaintainTable on a table of twenty
// appends: once the rewrite's first data file is on disk (before its
// commit) and once its commit is on disk (before it replied). The killed
// rewrite left orphans when killed before its commit; a gateway started
// again with a tiny reclaim.min_age deletes every file no version or
// snapshot references, the table reads every row once, and maintenance
// runs on it again.
func TestMaintenanceKilled(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts two gateway processes per kill point")
	}
	const appends, per = 20, 2000
	// The points: "written", once a new data file is on disk (before the
	// commit); "metadata", once Iceberg's new metadata.json is (before the
	// catalog points at it); "committed", once the commit landed (the Delta
	// log version, the catalog's pointer), before the reply.
	for _, kp := range []struct{ catalog, task, at string }{
		{"dl", "optimize", "written"},
		{"dl", "optimize", "committed"},
		{"lake", "rewrite_data_files", "written"},
		{"lake", "rewrite_data_files", "metadata"},
		{"lake", "rewrite_data_files", "committed"},
		{"lake", "rewrite_manifests", "metadata"},
		{"lake", "rewrite_manifests", "committed"},
	} {
		t.Run(kp.task+"/"+kp.at, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			p1 := startMaintainProc(t, dir, "24h")
			c := p1.flightClient(t)
			for k := range appends {
				o := modeAppend("t")
				if k == 0 {
					o = modeCreate("t")
				}
				o.Catalog = ptr(kp.catalog)
				if _, err := c.ExecuteIngest(ctx, reader(t, people(t, k*per, per)), o); err != nil {
					t.Fatal(err)
				}
			}
			tableDir := deltaTableDir(dir)
			unreferenced := func(*gatewayProc) []string { return deltaUnreferenced(t, dir) }
			next := filepath.Join(tableDir, "_delta_log", fmt.Sprintf("%020d.json", appends))
			landed := func() bool { _, err := os.Stat(next); return err == nil }
			metadata := landed
			if kp.catalog == "lake" {
				tableDir = filepath.Join(dir, "warehouse", "default.db", "t")
				unreferenced = func(g *gatewayProc) []string { return g.unreferenced(t) }
				cat := p1.catalog(t)
				snaps := func() int {
					tbl, err := cat.LoadTable(ctx, icetable.Identifier{"default", "t"})
					if err != nil {
						t.Fatal(err)
					}
					return len(tbl.Metadata().Snapshots())
				}
				metas := func() int {
					m, _ := filepath.Glob(filepath.Join(tableDir, "metadata", "*.metadata.json"))
					return len(m)
				}
				snapsBefore, metasBefore := snaps(), metas()
				landed = func() bool { return snaps() > snapsBefore }
				metadata = func() bool { return metas() > metasBefore }
			}
			before := dataFilesUnder(t, tableDir)
			written := func() bool {
				for f := range dataFilesUnder(t, tableDir) {
					if !before[f] {
						return true
					}
				}
				return false
			}
			req := actions.MaintainRequest{TableRef: actions.TableRef{Catalog: kp.catalog, Schema: "default", Table: "t"}, Tasks: []string{kp.task}}
			done := make(chan error, 1)
			go func() {
				_, err := client.MaintainTable(ctx, c, req)
				done <- err
			}()
			cond := map[string]func() bool{"written": written, "metadata": metadata, "committed": landed}[kp.at]
			replied := false
			for deadline := time.Now().Add(60 * time.Second); !cond(); {
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for the %s to reach the kill point; log:\n%s", kp.task, p1.logs.String())
				}
				select {
				case err := <-done:
					if !cond() {
						t.Fatalf("the %s ended (%v) before the kill point", kp.task, err)
					}
					replied = true
				default:
				}
			}
			p1.kill(t)
			if !replied {
				replied = <-done == nil
			}
			if replied {
				t.Logf("the %s replied before the kill", kp.task)
			}
			switch got := landed(); {
			case got != (kp.at == "committed") && kp.at == "metadata":
				// The catalog's swap follows the metadata file closely.
				t.Logf("killed once the metadata file was written, the commit had landed too")
			case got != (kp.at == "committed"):
				t.Fatalf("killed at %s, the commit landed: %v", kp.at, got)
			}
			left := unreferenced(p1)
			if kp.at == "written" && len(left) == 0 {
				t.Fatal("the rewrite killed before its commit landed left no orphan: the test shows nothing")
			}

			p2 := startMaintainProc(t, dir, "1ms")
			waitUntil(t, "the start-up reclaim of both catalogs finished", func() bool { return strings.Count(p2.logs.String(), "reclaim finished") >= 2 }, p2.logs)
			if strings.Contains(p2.logs.String(), "reclaim finished with errors") {
				t.Fatalf("reclaim failed:\n%s", p2.logs.String())
			}
			if after := unreferenced(p2); len(after) != 0 {
				t.Errorf("after the restart's reclaim %d of the %d orphans the kill left remain: %v", len(after), len(left), after)
			}
			total := appends * per
			count := func() string {
				return queryOne(t, p2.gateway, fmt.Sprintf("SELECT count(*), count(DISTINCT id) FROM %s.default.t", kp.catalog))
			}
			if got, want := count(), fmt.Sprintf("%d|%d", total, total); got != want {
				t.Errorf("after the kill: count, distinct = %s, want %s", got, want)
			}
			res, err := client.MaintainTable(ctx, p2.flightClient(t), req)
			if err != nil || res.Tasks[0].Abandoned != "" {
				t.Fatalf("%s after the restart: %+v, %v", kp.task, res, err)
			}
			if got, want := count(), fmt.Sprintf("%d|%d", total, total); got != want {
				t.Errorf("after the %s on the restarted gateway: count, distinct = %s, want %s", kp.task, got, want)
			}
			t.Logf("killed %s: %d orphans left by the kill; the %s again: committed %v",
				kp.at, len(left), kp.task, res.Tasks[0].Committed)
		})
	}
}

// backdate rewrites table t of the Iceberg catalog "lake" so that its
// history is a day older (every timestamp of its metadata shifted) with
// history.expire.max-snapshot-age-ms 1: expiry through a gateway keeps
// the snapshots of commit ids a client may send again younger than the
// commit messages' TTL plus the clock skew, and those of another process
// (p0's, here) for some minutes (docs/maintenance.md). The new metadata file lists the old one in its log, and the
// catalog's row points at it (no gateway runs meanwhile).
func backdate(t *testing.T, g *gatewayProc) {
	t.Helper()
	tbl := g.loadTable(t, "t")
	old := strings.TrimPrefix(tbl.MetadataLocation(), "file://")
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	const day = float64(24 * time.Hour / time.Millisecond) // past the default TTL of 12 h
	shift := func(list any) {
		for _, e := range list.([]any) {
			e.(map[string]any)["timestamp-ms"] = e.(map[string]any)["timestamp-ms"].(float64) - day
		}
	}
	last := m["last-updated-ms"].(float64) - day
	m["last-updated-ms"] = last
	shift(m["snapshots"])
	shift(m["snapshot-log"])
	log, _ := m["metadata-log"].([]any)
	shift(log)
	m["metadata-log"] = append(log, map[string]any{"metadata-file": tbl.MetadataLocation(), "timestamp-ms": last})
	m["properties"].(map[string]any)["history.expire.max-snapshot-age-ms"] = "1"
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	// As iceberg-go names a metadata file: the next version, a UUID.
	version, _, _ := strings.Cut(filepath.Base(old), "-")
	n, err := strconv.Atoi(version)
	if err != nil {
		t.Fatalf("metadata file %s: %v", old, err)
	}
	loc := filepath.Join(filepath.Dir(old), fmt.Sprintf("%05d-%s.metadata.json", n+1, uuid.NewString()))
	if err := os.WriteFile(loc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqliteshim", "file:"+filepath.Join(g.dataDir, "catalog.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE table_namespace = 'default' AND table_name = 't'`,
		"file://"+loc, tbl.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("backdate: %d catalog rows updated, want 1", n)
	}
}

// TestExpiryKilled: a gateway process is killed with SIGKILL in an
// Iceberg expire_snapshots through MaintainTable on a table of forty
// appends whose history is a day old: once the expiry's metadata.json is
// on disk (before the catalog points at it), and once the expiry landed
// (before or while it deletes what only the expired snapshots reached).
// The gateway started again with a tiny reclaim.min_age deletes every
// file no snapshot references, the current snapshot reads every row once,
// and expiry runs again.
func TestExpiryKilled(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts three gateway processes per kill point")
	}
	const appends, per = 40, 100
	for _, at := range []string{"metadata", "committed"} {
		t.Run(at, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			p0 := startMaintainProc(t, dir, "24h")
			c := p0.flightClient(t)
			for k := range appends {
				o := modeAppend("t")
				if k == 0 {
					o = modeCreate("t")
				}
				o.Catalog = ptr("lake")
				if _, err := c.ExecuteIngest(ctx, reader(t, people(t, k*per, per)), o); err != nil {
					t.Fatal(err)
				}
			}
			p0.kill(t)
			backdate(t, p0)
			p1 := startMaintainProc(t, dir, "24h")
			tableDir := filepath.Join(dir, "warehouse", "default.db", "t")
			cat := p1.catalog(t)
			snaps := func() int {
				tbl, err := cat.LoadTable(ctx, icetable.Identifier{"default", "t"})
				if err != nil {
					t.Fatal(err)
				}
				return len(tbl.Metadata().Snapshots())
			}
			metas := func() int {
				m, _ := filepath.Glob(filepath.Join(tableDir, "metadata", "*.metadata.json"))
				return len(m)
			}
			snapsBefore, metasBefore := snaps(), metas()
			if snapsBefore != appends {
				t.Fatalf("%d snapshots before the expiry, want %d", snapsBefore, appends)
			}
			landed := func() bool { return snaps() < snapsBefore }
			cond := map[string]func() bool{"metadata": func() bool { return metas() > metasBefore }, "committed": landed}[at]
			req := actions.MaintainRequest{TableRef: actions.TableRef{Catalog: "lake", Schema: "default", Table: "t"}, Tasks: []string{"expire_snapshots"}}
			done := make(chan error, 1)
			go func() {
				_, err := client.MaintainTable(ctx, p1.flightClient(t), req)
				done <- err
			}()
			replied := false
			for deadline := time.Now().Add(60 * time.Second); !cond(); {
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for the expiry to reach the kill point; log:\n%s", p1.logs.String())
				}
				select {
				case err := <-done:
					if !cond() {
						t.Fatalf("the expiry ended (%v) before the kill point; log:\n%s", err, p1.logs.String())
					}
					replied = true
				default:
				}
			}
			p1.kill(t)
			if !replied {
				replied = <-done == nil
			}
			if got := landed(); got != (at == "committed") {
				t.Logf("killed at %s, the expiry landed: %v", at, got)
			}
			left := p1.unreferenced(t)
			if at == "metadata" && !landed() && len(left) == 0 {
				t.Fatal("the expiry killed before its commit landed left no orphan: the test shows nothing")
			}

			p2 := startMaintainProc(t, dir, "1ms")
			waitUntil(t, "the start-up reclaim of both catalogs finished", func() bool { return strings.Count(p2.logs.String(), "reclaim finished") >= 2 }, p2.logs)
			if strings.Contains(p2.logs.String(), "reclaim finished with errors") {
				t.Fatalf("reclaim failed:\n%s", p2.logs.String())
			}
			if after := p2.unreferenced(t); len(after) != 0 {
				t.Errorf("after the restart's reclaim %d of the %d orphans the kill left remain: %v", len(after), len(left), after)
			}
			count := func() string {
				return queryOne(t, p2.gateway, "SELECT count(*), count(DISTINCT id) FROM lake.default.t")
			}
			want := fmt.Sprintf("%d|%d", appends*per, appends*per)
			if got := count(); got != want {
				t.Errorf("after the kill: count, distinct = %s, want %s", got, want)
			}
			res, err := client.MaintainTable(ctx, p2.flightClient(t), req)
			if err != nil || res.Tasks[0].Abandoned != "" {
				t.Fatalf("expiry after the restart: %+v, %v", res, err)
			}
			if n := snaps(); n != 1 {
				t.Errorf("%d snapshots after the expiry on the restarted gateway, want 1", n)
			}
			if got := count(); got != want {
				t.Errorf("after the expiry on the restarted gateway: count, distinct = %s, want %s", got, want)
			}
			t.Logf("killed at %s (replied %v): %d orphans left by the kill; expiry again: %d expired", at, replied, len(left), len(res.Tasks[0].ExpiredSnapshots))
		})
	}
}
