package paimon_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// The JDBC catalog's cross-checks with Paimon Java's JdbcCatalog (make
// paimon-jdbc-check): one warehouse and one metastore (-jdbc-uri, catalog
// key "jdbc", lock.enabled) shared by both. TestWriteSamplesJDBC writes
// the samples into -samples-out for Java's jdbc-list and verify-tables;
// TestReadJavaTablesJDBC reads what Java's write-sample created through
// the same catalog; TestJDBCJavaRace commits to one table while Java's
// jdbc-commit-loop does, both under Paimon's JDBC lock.
var jdbcURI = flag.String("jdbc-uri", "", "the Paimon JDBC metastore shared with Paimon Java (jdbc:sqlite:/path or jdbc:postgresql://...)")

func openShared(t *testing.T, wh string) *paimon.Provider {
	t.Helper()
	if *jdbcURI == "" || wh == "" {
		t.Skip("-jdbc-uri and the warehouse flag not set (make paimon-jdbc-check)")
	}
	props := map[string]string{paimon.PropWarehouse: wh, paimon.PropCreateNamespaces: "default",
		paimon.PropMetastore: paimon.MetastoreJDBC, paimon.PropURI: *jdbcURI, paimon.PropLockEnabled: "true",
		paimon.PropLockCheckMaxSleep: "100 ms", lake.PropCommitRetries: "1000"}
	p, err := paimon.Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestWriteSamplesJDBC writes the samples through the JDBC catalog, with
// their expected rows, and the race table TestJDBCJavaRace fills.
func TestWriteSamplesJDBC(t *testing.T) {
	if *samplesOut != "" && *jdbcURI != "" {
		if err := os.RemoveAll(*samplesOut); err != nil {
			t.Fatal(err)
		}
	}
	p := openShared(t, *samplesOut)
	exp := filepath.Join(*samplesOut, "expected")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range samples() {
		fillSample(t, p, s)
		want := s.expected()
		body := fmt.Sprintf("ROWS %d\n%s\n", len(want), strings.Join(want, "\n"))
		if err := os.WriteFile(filepath.Join(exp, s.name+".txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "race"}
	if _, err := p.CreateTable(context.Background(), id, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
}

// TestReadJavaTablesJDBC lists and reads the tables Java's write-sample
// created through its JdbcCatalog, in database db of the same catalog.
func TestReadJavaTablesJDBC(t *testing.T) {
	p := openShared(t, *javaWarehouse)
	ctx := context.Background()
	ts, err := p.ListTables(ctx, []string{"db"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, id := range ts {
		names = append(names, id.Name)
	}
	javaTables := []string{"j_append", "j_fixed", "j_pk", "j_part"}
	for _, n := range javaTables {
		if !slices.Contains(names, n) {
			t.Errorf("ListTables(db) = %v, lacks %s", names, n)
		}
	}
	for _, name := range javaTables {
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: name}
		var want []string
		for commit := range 2 {
			for i := range int64(10) {
				k := int64(commit)*10 + i
				if name == "j_pk" {
					if k = i; commit == 0 {
						continue // updated by the second commit
					}
				}
				want = append(want, fmt.Sprintf("id=%d,name=n%d-%d,p=p%d", k, commit, i, i%2))
			}
		}
		slices.Sort(want)
		if got := scanRendered(t, p, id); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
}

// raceCommits is how many commits each side makes in the race.
const raceCommits = 20

// TestJDBCJavaRace waits for Java's jdbc-commit-loop to start (the file
// java-started beside -samples-out), tells it to go (go-ready), commits raceCommits one-row batches to
// default.race while Java commits its own, waits for Java to finish, and
// checks that every commit of both landed once: both sides' rows, and
// snapshots numbered 1..2·raceCommits.
func TestJDBCJavaRace(t *testing.T) {
	p := openShared(t, *samplesOut)
	ctx := context.Background()
	dir := filepath.Dir(*samplesOut)
	waitFile(t, filepath.Join(dir, "java-started"))
	if err := os.WriteFile(filepath.Join(dir, "go-ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "race"}
	var want []string
	for i := range raceCommits {
		r := sampleRow{id: int64(1000 + i), p: fmt.Sprintf("p%d", i%2)}
		name := fmt.Sprintf("gw-%d", i)
		r.name = &name
		want = append(want, r.render())
		jn := fmt.Sprintf("java-%d", i)
		want = append(want, sampleRow{id: int64(i), name: &jn, p: fmt.Sprintf("p%d", i%2)}.render())
		ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			t.Fatal(err)
		}
		b := sampleBatch([]sampleRow{r})
		err = ws.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		rs, err := ws.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.CommitOnce(ctx, id, name, rs); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	waitFile(t, filepath.Join(dir, "java-done"))
	slices.Sort(want)
	if got := scanRendered(t, p, id); !slices.Equal(got, want) {
		t.Errorf("race: %d rows, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if spec.CurrentSnapshotID == nil || *spec.CurrentSnapshotID != 2*raceCommits {
		t.Errorf("race: latest snapshot %v, want %d (one per commit, no gaps)", spec.CurrentSnapshotID, 2*raceCommits)
	}
	for s := int64(1); s <= 2*raceCommits; s++ {
		if _, err := os.Stat(filepath.Join(*samplesOut, "default.db", "race", "snapshot", fmt.Sprintf("snapshot-%d", s))); err != nil {
			t.Errorf("race: snapshot-%d: %v", s, err)
		}
	}
	t.Logf("race: %d gateway and %d Java commits landed as snapshots 1..%d", raceCommits, raceCommits, 2*raceCommits)
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := os.Stat(path)
		if err == nil {
			return
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
