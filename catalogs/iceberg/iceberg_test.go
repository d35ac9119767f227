package iceberg_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// openLocal opens a SQLite catalog with local files in a temporary
// directory and returns the provider and the warehouse directory.
func openLocal(t testing.TB, extra map[string]string) (*iceberg.Provider, string) {
	t.Helper()
	dir := t.TempDir()
	props, err := iceberg.EmbeddedProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range extra {
		props[k] = v
	}
	p, err := iceberg.Open(context.Background(), iceberg.EmbeddedCatalogName, props)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, filepath.Join(dir, "warehouse")
}

// openReplica opens a second provider on the embedded catalog whose
// warehouse is wh, as another gateway process sharing it does.
func openReplica(t *testing.T, wh string) *iceberg.Provider {
	t.Helper()
	props, err := iceberg.EmbeddedProperties(filepath.Dir(wh))
	if err != nil {
		t.Fatal(err)
	}
	p, err := iceberg.Open(context.Background(), iceberg.EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func listDir(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return fs.SkipAll // nothing written yet
			}
			return err
		}
		if !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}

// conformance is what the Iceberg backend declares to the suite: it
// stages Parquet files, commits by compare-and-swap (merging the
// concurrent commits of one gateway: group commit), has field ids and
// snapshots, writes one file per partition bucket, reads a transaction's
// staged writes through ScanStaged, and cannot store month intervals; its
// file plans are plain when the warehouse is local.
func conformance(local bool) catalogtest.Config {
	var gran time.Duration
	if !local {
		gran = time.Second // iceberg-go's blob listing of S3: whole seconds
	}
	return catalogtest.Config{
		ModTimeGranularity: gran,
		StagesFiles:        true, CompareAndSwap: true, GroupsCommits: true, FieldIDs: true, Snapshots: true,
		StagedScans: true,
		Layout:      catalogtest.LayoutOneFilePerBucket, PlainPlans: local,
		UnstorableType: arrow.FixedWidthTypes.MonthInterval,
		// A SQL catalog drops conditionally; a REST catalog cannot
		// (TestConformanceREST).
		DropsUnwritten: true,
	}
}

func TestConformanceSQLiteLocal(t *testing.T) {
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		p, wh := openLocal(t, nil)
		return &catalogtest.Instance{
			Provider: p, Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
			Replica:   func(t *testing.T) catalogs.Provider { return openReplica(t, wh) },
		}
	}}, conformance(true))
}

// TestConformanceSQLiteLocalNoGroup runs the suite with group commit off:
// every commit is its own compare-and-swap loop, as between gateways.
func TestConformanceSQLiteLocalNoGroup(t *testing.T) {
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		p, wh := openLocal(t, map[string]string{iceberg.PropCommitGroupEnabled: "false"})
		return &catalogtest.Instance{
			Provider: p, Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
		}
	}}, noGroup(conformance(true)))
}

// keeps is cfg of a catalog with no conditional drop: DropUnwritten keeps
// every table.
func keeps(cfg catalogtest.Config) catalogtest.Config {
	cfg.DropsUnwritten = false
	return cfg
}

// noGroup is cfg with group commit off: each commit its own loop.
func noGroup(cfg catalogtest.Config) catalogtest.Config {
	cfg.GroupsCommits = false
	return cfg
}

// fakeS3 serves an in-memory S3 on 127.0.0.1 with one bucket.
type fakeS3 struct {
	backend *s3mem.Backend
	url     string
	n       atomic.Int64
}

const bucket = "lake"

func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	return &fakeS3{backend: be, url: srv.URL}
}

func (f *fakeS3) list(prefix string) ([]string, error) {
	res, err := f.backend.ListBucket(bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, gofakes3.ListBucketPage{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(res.Contents))
	for _, c := range res.Contents {
		out = append(out, c.Key)
	}
	return out, nil
}

func (f *fakeS3) props(t *testing.T, prefix string) map[string]string {
	return map[string]string{
		iceberg.PropCatalogType:       iceberg.TypeSQL,
		iceberg.PropURI:               "sqlite:///" + strings.TrimPrefix(filepath.ToSlash(filepath.Join(t.TempDir(), "catalog.db")), "/"),
		iceberg.PropWarehouse:         "s3://" + bucket + "/" + prefix,
		iceberg.PropCreateNamespaces:  "default",
		iceberg.PropS3Endpoint:        f.url,
		iceberg.PropS3Region:          "us-east-1",
		iceberg.PropS3AccessKeyID:     "test",
		iceberg.PropS3SecretAccessKey: "test-secret",
		// A session token, so that the suite sees a real one never print.
		iceberg.PropS3SessionToken:    "fake-s3-session-token",
		"s3.force-virtual-addressing": "false",
	}
}

func TestConformanceSQLiteS3(t *testing.T) {
	s3 := newFakeS3(t)
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		prefix := fmt.Sprintf("wh-%d", s3.n.Add(1))
		p, err := iceberg.Open(context.Background(), "lake", s3.props(t, prefix))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return s3.list(prefix + "/") },
		}
	}}, conformance(false))
}

func TestRegistered(t *testing.T) {
	dir := t.TempDir()
	props, err := iceberg.EmbeddedProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := catalogs.Open(context.Background(), iceberg.Type, "lake", props)
	if err != nil {
		t.Fatalf("catalogs.Open: %v", err)
	}
	if c, ok := p.(catalogs.Closer); ok {
		_ = c.Close()
	}
}

// TestConformanceREST runs the suite against a real Iceberg REST catalog:
// Iceberg's RESTCatalogServer, started by integration/iceberg-rest/run.sh
// (make iceberg-rest-check), which sets the variables below.
func TestConformanceREST(t *testing.T) {
	uri := os.Getenv("FLIGHTGW_ICEBERG_REST_URI")
	wh := os.Getenv("FLIGHTGW_ICEBERG_REST_WAREHOUSE")
	if uri == "" || wh == "" {
		t.Skip("no REST catalog: run make iceberg-rest-check")
	}
	var n atomic.Int64
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		ns := fmt.Sprintf("ns%d_%d", os.Getpid(), n.Add(1))
		p, err := iceberg.Open(context.Background(), "rest", map[string]string{
			iceberg.PropCatalogType: iceberg.TypeREST, iceberg.PropURI: uri, iceberg.PropCreateNamespaces: ns,
		})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return &catalogtest.Instance{
			Provider: p, Catalog: "rest", Namespace: []string{ns},
			ListFiles: func(context.Context) ([]string, error) { return listDir(filepath.Join(wh, ns)) },
		}
	}}, keeps(conformance(false)))
}

// TestConformancePostgres runs the suite with the SQL catalog on
// PostgreSQL, started by testdata/postgres.sh (make
// iceberg-postgres-check). Each instance is a catalog of its own name in
// the same database.
func TestConformancePostgres(t *testing.T) {
	uri := os.Getenv("FLIGHTGW_ICEBERG_PG_URI")
	if uri == "" {
		t.Skip("no PostgreSQL: run make iceberg-postgres-check")
	}
	var n atomic.Int64
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		name := fmt.Sprintf("pg%d_%d", os.Getpid(), n.Add(1))
		wh := t.TempDir()
		p, err := iceberg.Open(context.Background(), name, map[string]string{
			iceberg.PropCatalogType: iceberg.TypeSQL, iceberg.PropURI: uri,
			iceberg.PropWarehouse: "file://" + wh, iceberg.PropCreateNamespaces: "default",
		})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return &catalogtest.Instance{
			Provider: p, Catalog: name, Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
		}
	}}, conformance(true))
}

// TestRESTSecurityContext checks that the credential a real REST catalog
// hands out with a table (run.sh configures RESTCatalogServer to include
// an S3 session token) is the one GetSecurityContext reports.
func TestRESTSecurityContext(t *testing.T) {
	uri := os.Getenv("FLIGHTGW_ICEBERG_REST_URI")
	if uri == "" {
		t.Skip("no REST catalog: run make iceberg-rest-check")
	}
	ctx := context.Background()
	ns := fmt.Sprintf("sec%d", os.Getpid())
	p, err := iceberg.Open(ctx, "rest", map[string]string{
		iceberg.PropCatalogType: iceberg.TypeREST, iceberg.PropURI: uri, iceberg.PropCreateNamespaces: ns,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: "rest", Namespace: []string{ns}, Name: "secured"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	sec, err := p.GetSecurityContext(ctx, id)
	if err != nil {
		t.Fatalf("GetSecurityContext: %v", err)
	}
	if got := sec.Credentials.Token.Reveal(); got != "fixture-session-token" {
		t.Errorf("credential = %q, want the catalog's fixture-session-token", got)
	}
	if sec.Encryption.Kind != catalogs.EncryptionNone || sec.Credentials.Scope.Table == nil || sec.Credentials.Scope.Table.Name != "secured" {
		t.Errorf("security context = %+v", sec)
	}
}
