package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/twmb/avro/ocf"
)

// startPaimonProc starts a gateway process whose only catalog is a Paimon
// one on a JDBC (SQLite) metastore with Paimon's distributed lock, the
// lock quick to give up (lock-acquire-timeout 3 s, also the age past
// which a lock row counts as abandoned).
func startPaimonProc(t *testing.T, dataDir, minAge string) *gatewayProc {
	t.Helper()
	yaml := fmt.Sprintf(`catalogs:
  - name: lake
    type: paimon
    properties:
      warehouse: %[1]s/paimon
      metastore: jdbc
      uri: jdbc:sqlite:%[1]s/paimon.db
      lock.enabled: "true"
      lock-acquire-timeout: 3s
      lock-check-max-sleep: 100ms
      create-namespaces: default
`, dataDir)
	return startChild(t, dataDir, yaml, "FLIGHTGW_RECLAIM_MIN_AGE="+minAge)
}

// paimonTableDir is table t's directory in the Paimon warehouse.
func paimonTableDir(dataDir string) string {
	return filepath.Join(dataDir, "paimon", "default.db", "t")
}

// avroRecords decodes the records of an Avro container file.
func avroRecords(t *testing.T, file string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ocf.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	defer r.Close()
	var out []map[string]any
	for {
		var v map[string]any
		err := r.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, v)
	}
}

// paimonUnreferenced returns the files of the (unpartitioned) Paimon
// table t that no snapshot or tag reaches, read here with a generic Avro
// decoder, not the backend: the manifest lists each snapshot file names,
// the manifests they list and the data files of their entries. Files the
// reclaimer is not meant to delete (snapshots, schemas, hints) are not
// listed; hidden temporary files are.
func paimonUnreferenced(t *testing.T, dataDir string) []string {
	t.Helper()
	dir := paimonTableDir(dataDir)
	ref := map[string]bool{}
	for _, sub := range []string{"snapshot", "tag"} {
		names, _ := filepath.Glob(filepath.Join(dir, sub, sub+"-*"))
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			var s struct{ BaseManifestList, DeltaManifestList string }
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			for _, l := range []string{s.BaseManifestList, s.DeltaManifestList} {
				ref["manifest/"+l] = true
				for _, m := range avroRecords(t, filepath.Join(dir, "manifest", l)) {
					mf := m["_FILE_NAME"].(string)
					ref["manifest/"+mf] = true
					for _, e := range avroRecords(t, filepath.Join(dir, "manifest", mf)) {
						f := e["_FILE"].(map[string]any)
						ref[fmt.Sprintf("bucket-%v/%s", e["_BUCKET"], f["_FILE_NAME"])] = true
					}
				}
			}
		}
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		top, _, _ := strings.Cut(rel, "/")
		hidden := strings.HasPrefix(path.Base(rel), ".")
		if (top == "manifest" || strings.HasPrefix(top, "bucket-") || hidden && top != "schema") && !ref[rel] && path.Base(rel) != ".flightgw-db" {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lockRows opens the metastore's SQLite database as Paimon Java would.
func lockRows(t *testing.T, dataDir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqliteshim", "file:"+filepath.Join(dataDir, "paimon.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPaimonReclaimAfterKill is TestReclaimAfterKill on a Paimon catalog
// with a JDBC metastore and its distributed lock: SIGKILL during an
// ingest stream, with a transaction open that staged files, and inside a
// commit (its manifests and manifest lists written, waiting for the
// table's lock, held by a row of paimon_distributed_locks). A gateway
// started again with a tiny reclaim.min_age deletes every file they left,
// the engine reads exactly the acknowledged rows, and the lock row the
// killed commit's process left behind (here: a row as a killed holder
// leaves it, acquired just before the kill, expire_time_seconds the
// lock-acquire-timeout) only delays the next commit until it expires: the
// restarted gateway logs that it waits, clears the row and commits.
func TestPaimonReclaimAfterKill(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts three gateway processes")
	}
	dir := t.TempDir()
	ctx := context.Background()
	files := func(sub string, suffix string) int {
		n := 0
		filepath.WalkDir(filepath.Join(paimonTableDir(dir), sub), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) && !strings.HasPrefix(d.Name(), ".") {
				n++
			}
			return nil
		})
		return n
	}
	dataFiles := func() int { return files("bucket-0", ".parquet") }

	// 1. A committed table, then a kill while an ingest streams.
	p1 := startPaimonProc(t, dir, "24h")
	cnxn := p1.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "t", adbc.OptionValueIngestModeCreate, people(t, 0, 100)); err != nil {
		t.Fatal(err)
	}
	committed := dataFiles()
	stall := &stalledReader{t: t, batches: 6, release: make(chan struct{})}
	ingestDone := make(chan error, 1)
	go func() {
		stmt, err := cnxn.NewStatement()
		if err == nil {
			defer stmt.Close()
			_ = stmt.SetOption(adbc.OptionKeyIngestTargetTable, "t")
			_ = stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeAppend)
			if err = stmt.BindStream(ctx, stall); err == nil {
				_, err = stmt.ExecuteUpdate(ctx)
			}
		}
		ingestDone <- err
	}()
	waitUntil(t, "the ingest staged a data file", func() bool { return dataFiles() > committed }, p1.logs)
	p1.kill(t)
	close(stall.release)
	if err := <-ingestDone; err == nil {
		t.Fatal("the ingest into a killed gateway succeeded")
	}
	afterIngest := len(paimonUnreferenced(t, dir))

	// 2. A transaction with staged files, then a kill inside a commit
	// waiting for the table's lock.
	p2 := startPaimonProc(t, dir, "24h")
	txc := p2.adbcConn(t, nil)
	if err := txc.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, txc, "t", adbc.OptionValueIngestModeAppend, people(t, 5000, 50)); err != nil {
		t.Fatal(err)
	}
	afterTxn := len(paimonUnreferenced(t, dir))
	db := lockRows(t, dir)
	const lockID = "jdbc.default.t"
	if _, err := db.Exec("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) VALUES (?, 3600)", lockID); err != nil {
		t.Fatal(err)
	}
	lists := files("manifest", "")
	auto := p2.adbcConn(t, nil)
	go func() {
		_, err := ingest(t, auto, "t", adbc.OptionValueIngestModeAppend, people(t, 7000, 50))
		ingestDone <- err
	}()
	waitUntil(t, "the commit wrote its manifests and waits for the lock", func() bool {
		return files("manifest", "") >= lists+3 && strings.Contains(p2.logs.String(), "table lock held")
	}, p2.logs)
	p2.kill(t)
	if err := <-ingestDone; err == nil {
		t.Fatal("the ingest whose commit was killed succeeded")
	}
	// The row a holder killed inside its commit leaves behind.
	if _, err := db.Exec("UPDATE paimon_distributed_locks SET acquired_at = CURRENT_TIMESTAMP, expire_time_seconds = 3 WHERE lock_id = ?", lockID); err != nil {
		t.Fatal(err)
	}
	left := paimonUnreferenced(t, dir)
	t.Logf("unreferenced: %d after the killed ingest, %d with the transaction, %d after the killed commit: %v", afterIngest, afterTxn, len(left), left)
	if afterIngest == 0 || afterTxn <= afterIngest || len(left) < afterTxn+3 {
		t.Fatalf("the kills left no orphans of some kind: %v", left)
	}

	// 3. A gateway with a tiny min age reclaims them all at start.
	p3 := startPaimonProc(t, dir, "1ms")
	waitUntil(t, "the start-up reclaim finished", func() bool { return strings.Contains(p3.logs.String(), "reclaim finished") }, p3.logs)
	if strings.Contains(p3.logs.String(), "reclaim finished with errors") {
		t.Fatalf("reclaim failed:\n%s", p3.logs.String())
	}
	if rest := paimonUnreferenced(t, dir); len(rest) != 0 {
		t.Errorf("unreferenced files after the reclaim: %v\n%s", rest, p3.logs.String())
	}
	c3 := p3.adbcConn(t, nil)
	if got := mustRows(t, c3, `SELECT count(*), min(id), max(id) FROM t`, nil); !slices.Equal(got, []string{"100|0|99"}) {
		t.Errorf("rows after the kills: %v, want the 100 committed ones", got)
	}
	if !strings.Contains(p3.logs.String(), "reclaimed orphan files") {
		t.Errorf("no per-table log line:\n%s", p3.logs.String())
	}

	// 4. The left lock row: the next commit waits until it expires, then
	// commits, and leaves no row.
	start := time.Now()
	if _, err := ingest(t, c3, "t", adbc.OptionValueIngestModeAppend, people(t, 9000, 50)); err != nil {
		t.Fatalf("commit after the killed holder's lock row: %v\n%s", err, p3.logs.String())
	}
	t.Logf("the commit waited %s for the left lock row", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(p3.logs.String(), "table lock held") || !strings.Contains(p3.logs.String(), "lock="+lockID) {
		t.Errorf("the wait for the left lock row was not logged:\n%s", p3.logs.String())
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM paimon_distributed_locks").Scan(&n); err != nil || n != 0 {
		t.Errorf("lock rows after the commit: %d, %v", n, err)
	}
	if got := mustRows(t, c3, `SELECT count(*), min(id), max(id) FROM t WHERE id < 9000 OR id >= 9000`, nil); !slices.Equal(got, []string{"150|0|9049"}) {
		t.Errorf("rows: %v, want the 150 acknowledged ones", got)
	}
	if rest := paimonUnreferenced(t, dir); len(rest) != 0 {
		t.Errorf("unreferenced files after the last commit: %v", rest)
	}
}
