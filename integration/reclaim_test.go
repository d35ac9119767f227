package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/server"
)

// The gateways of TestReclaimAfterKill and TestCommitMessagesCoordinatorKilled
// run in processes of their own, so that they can be killed with SIGKILL:
// this test binary, started again with FLIGHTGW_RECLAIM_CHILD=1 and
// -test.run=TestReclaimGatewayProcess, serves the gateway like flightgw
// serve until it is killed.
const reclaimChildEnv = "FLIGHTGW_RECLAIM_CHILD"

// TestReclaimGatewayProcess is the killed gateway: it does nothing unless
// started by startChild.
func TestReclaimGatewayProcess(t *testing.T) {
	if os.Getenv(reclaimChildEnv) != "1" {
		t.Skip("the gateway process of TestReclaimAfterKill")
	}
	cfg, err := server.LoadConfig(os.Getenv("FLIGHTGW_RECLAIM_CONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := server.Run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// gatewayProc is a gateway in a child process.
type gatewayProc struct {
	*gateway
	cmd  *exec.Cmd
	logs *syncBuffer
}

// startProc starts the gateway process on dataDir with reclaim.min_age
// set to minAge, and waits until it listens.
func startProc(t *testing.T, dataDir, minAge string) *gatewayProc {
	t.Helper()
	// Small files, so that an ingest stream has rolled some to disk
	// after a few batches.
	yaml := fmt.Sprintf(`catalogs:
  - name: lake
    type: iceberg
    properties:
      catalog-type: sql
      uri: sqlite://%[1]s/catalog.db
      warehouse: file://%[1]s/warehouse
      create-namespaces: default
      write.target-file-size-bytes: "4096"
`, dataDir)
	return startChild(t, dataDir, yaml, "FLIGHTGW_RECLAIM_MIN_AGE="+minAge)
}

// startChild starts a gateway process (TestReclaimGatewayProcess) with the
// configuration yaml, written to dataDir, and the environment env added,
// and waits until it listens.
func startChild(t *testing.T, dataDir, yaml string, env ...string) *gatewayProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	conf := filepath.Join(dataDir, "flightgw.yaml")
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReclaimGatewayProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), reclaimChildEnv+"=1", "FLIGHTGW_RECLAIM_CONFIG="+conf,
		"FLIGHTGW_DATA_DIR="+dataDir, "FLIGHTGW_LISTEN="+addr), env...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &gatewayProc{gateway: &gateway{addr: addr, dataDir: dataDir, logs: logs}, cmd: cmd, logs: logs}
	t.Cleanup(func() { p.kill(t) })
	waitUntil(t, "the gateway listens on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, logs)
	return p
}

// kill ends the process with SIGKILL: nothing of it runs afterwards.
func (p *gatewayProc) kill(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func waitUntil(t *testing.T, what string, cond func() bool, logs *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s; gateway log:\n%s", what, logs.String())
		}
	}
}

// tableFiles lists the files of table t's data/ and metadata/ directories.
func tableFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dataDir, "warehouse", "default.db", "t")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// unreferenced returns the files of table t that its metadata does not
// reach (iceberg-go alone): the current metadata file and its log, and for
// every snapshot its manifest list, manifests and their entries' files.
func (g *gateway) unreferenced(t *testing.T) []string {
	t.Helper()
	tbl := g.loadTable(t, "t")
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref := map[string]bool{}
	add := func(s string) { ref[strings.TrimPrefix(s, "file://")] = true }
	add(tbl.MetadataLocation())
	for e := range tbl.Metadata().PreviousFiles() {
		add(e.MetadataFile)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		add(s.ManifestList)
		mfs, err := s.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			add(mf.FilePath())
			entries, err := mf.FetchEntries(fsys, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				add(e.DataFile().FilePath())
			}
		}
	}
	var out []string
	for _, f := range tableFiles(t, g.dataDir) {
		if !ref[f] {
			out = append(out, f)
		}
	}
	return out
}

// stalledReader yields batches of people and then blocks until release
// is closed, as a client that stopped sending mid-stream.
type stalledReader struct {
	t       *testing.T
	batches int
	release chan struct{}
	cur     arrow.RecordBatch
	next    int
}

func (r *stalledReader) Retain()                        {}
func (r *stalledReader) Release()                       {}
func (r *stalledReader) Schema() *arrow.Schema          { return peopleSchema }
func (r *stalledReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *stalledReader) Record() arrow.RecordBatch      { return r.cur }
func (r *stalledReader) Err() error                     { return nil }
func (r *stalledReader) Next() bool {
	if r.next >= r.batches {
		<-r.release
		return false
	}
	r.cur = people(r.t, 1000+r.next*500, 500)
	r.next++
	return true
}

// TestReclaimAfterKill kills the gateway with SIGKILL during an ingest
// stream, with a transaction open that has staged files, and in the middle
// of a commit (after it wrote its manifests and metadata.json, before the
// catalog's compare-and-swap: the test holds the SQLite catalog's write
// lock). Each leaves files behind. A gateway started again with a tiny
// reclaim.min_age deletes every one of them at start: the table's files
// are then exactly those its metadata references, and its rows exactly
// the committed ones.
func TestReclaimAfterKill(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts three gateway processes")
	}
	dir := t.TempDir()
	ctx := context.Background()

	// 1. A committed table, then a kill while an ingest streams.
	p1 := startProc(t, dir, "24h")
	cnxn := p1.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "t", adbc.OptionValueIngestModeCreate, people(t, 0, 100)); err != nil {
		t.Fatal(err)
	}
	committed := len(tableFiles(t, dir))
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
	waitUntil(t, "the ingest staged a data file", func() bool { return len(tableFiles(t, dir)) > committed }, p1.logs)
	p1.kill(t)
	close(stall.release)
	if err := <-ingestDone; err == nil {
		t.Fatal("the ingest into a killed gateway succeeded")
	}
	afterIngest := p1.unreferenced(t)

	// 2. A transaction with staged files, then a kill in a commit.
	p2 := startProc(t, dir, "24h")
	txc := p2.adbcConn(t, nil)
	if err := txc.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, txc, "t", adbc.OptionValueIngestModeAppend, people(t, 5000, 50)); err != nil {
		t.Fatal(err)
	}
	afterTxn := p2.unreferenced(t)
	lock := lockCatalog(t, dir)
	metadataFiles := func() int {
		n := 0
		for _, f := range tableFiles(t, dir) {
			if strings.HasSuffix(f, ".metadata.json") {
				n++
			}
		}
		return n
	}
	before := metadataFiles()
	auto, rows := p2.adbcConn(t, nil), people(t, 7000, 50)
	go func() {
		_, err := ingest(t, auto, "t", adbc.OptionValueIngestModeAppend, rows)
		ingestDone <- err
	}()
	waitUntil(t, "the commit wrote its metadata.json", func() bool { return metadataFiles() > before }, p2.logs)
	p2.kill(t)
	lock()
	if err := <-ingestDone; err == nil {
		t.Fatal("the ingest whose commit was killed succeeded")
	}
	left := p2.unreferenced(t)

	// Each kill left orphans of its kind.
	kinds := func(files []string) (data, manifests, metadata int) {
		for _, f := range files {
			switch {
			case strings.HasSuffix(f, ".parquet"):
				data++
			case strings.HasSuffix(f, ".metadata.json"):
				metadata++
			case strings.HasSuffix(f, ".avro"):
				manifests++
			}
		}
		return
	}
	d1, _, _ := kinds(afterIngest)
	d2, _, _ := kinds(afterTxn)
	d3, m3, md3 := kinds(left)
	t.Logf("orphans: %d after the killed ingest, %d with the transaction, %d data + %d manifests + %d metadata after the killed commit",
		d1, d2-d1, d3, m3, md3)
	if d1 == 0 || d2 <= d1 || d3 <= d2 || m3 < 2 || md3 < 1 {
		t.Fatalf("the kills left no orphans of some kind: %v", left)
	}

	// 3. A gateway with a tiny min age reclaims them all at start.
	p3 := startProc(t, dir, "1ms")
	waitUntil(t, "the start-up reclaim finished", func() bool { return strings.Contains(p3.logs.String(), "reclaim finished") }, p3.logs)
	if strings.Contains(p3.logs.String(), "reclaim finished with errors") {
		t.Fatalf("reclaim failed:\n%s", p3.logs.String())
	}
	if rest := p3.unreferenced(t); len(rest) != 0 {
		t.Errorf("unreferenced files after the reclaim: %v\n%s", rest, p3.logs.String())
	}
	got := mustRows(t, p3.adbcConn(t, nil), `SELECT count(*), min(id), max(id) FROM t`, nil)
	if !slices.Equal(got, []string{"100|0|99"}) {
		t.Errorf("rows after the kills: %v, want the 100 committed ones", got)
	}
	if !strings.Contains(p3.logs.String(), "reclaimed orphan files") {
		t.Errorf("no per-table log line:\n%s", p3.logs.String())
	}
}

// lockCatalog takes the write lock of the embedded catalog's SQLite
// database, as a writer in another process would, so that a gateway's
// commit waits at its compare-and-swap; the returned func releases it.
func lockCatalog(t *testing.T, dataDir string) func() {
	t.Helper()
	db, err := sql.Open("sqliteshim", "file:"+filepath.Join(dataDir, "catalog.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			_, err := conn.ExecContext(context.Background(), "ROLLBACK")
			if err != nil && !errors.Is(err, sql.ErrConnDone) {
				t.Error(err)
			}
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}
