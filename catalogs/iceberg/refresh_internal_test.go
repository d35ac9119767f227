package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

var accessKey = regexp.MustCompile(`Credential=([^/]+)/`)

// TestVendedCredentialRefreshedMidUpload: a stream whose vended S3
// credential expires while it uploads goes on with the next one the
// catalog vends, asked for within refreshWindow of the expiry: the data
// files of the upload are signed with successive vended keys (never the
// catalog's static one), and the upload commits every row.
func TestVendedCredentialRefreshedMidUpload(t *testing.T) {
	defer func(w time.Duration) { refreshWindow = w }(refreshWindow)
	refreshWindow = time.Second
	const lifetime = 1500 * time.Millisecond

	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		puts []string // "<access key> <object key>"
	)
	fake := gofakes3.New(be).Server()
	s3srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			key := "?"
			if m := accessKey.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
				key = m[1]
			}
			mu.Lock()
			puts = append(puts, key+" "+r.URL.Path)
			mu.Unlock()
		}
		fake.ServeHTTP(w, r)
	}))
	defer s3srv.Close()

	// The catalog's vending side: each load-table vends a new key pair
	// that lives lifetime.
	var loads atomic.Int64
	rest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/config") {
			_ = json.NewEncoder(w).Encode(map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{}})
			return
		}
		n := loads.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"metadata-location": "s3://lake/wh/default.db/long/metadata/x.metadata.json",
			"metadata":          map[string]any{"properties": map[string]string{}},
			"storage-credentials": []map[string]any{{"prefix": "s3://lake/", "config": map[string]string{
				PropS3AccessKeyID:                fmt.Sprintf("vended-%d", n),
				PropS3SecretAccessKey:            "secret",
				PropS3SessionToken:               "token",
				"s3.session-token-expires-at-ms": fmt.Sprint(time.Now().Add(lifetime).UnixMilli())}}},
		})
	}))
	defer rest.Close()

	ctx := context.Background()
	p, err := Open(ctx, "lake", map[string]string{
		PropCatalogType: TypeSQL, PropURI: "sqlite:///" + strings.TrimPrefix(filepath.ToSlash(filepath.Join(t.TempDir(), "catalog.db")), "/"),
		PropWarehouse: "s3://lake/wh", PropCreateNamespaces: "default", PropTargetFileSize: "1024",
		PropS3Endpoint: s3srv.URL, PropS3Region: "us-east-1", PropS3AccessKeyID: "static", PropS3SecretAccessKey: "static-secret",
		"s3.force-virtual-addressing": "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	base, _ := url.Parse(rest.URL + "/v1/")
	p.vendor = &vendor{base: base, client: rest.Client()}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "long"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	const batches, rows = 6, 200
	for i := range int64(batches) {
		b := catalogtest.Batch(i*rows, rows)
		err := s.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		time.Sleep(lifetime / 3)
	}
	receipts, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, receipts); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, p, id, catalogs.ScanRequest{}).rows; got != batches*rows {
		t.Errorf("%d rows, want %d", got, batches*rows)
	}
	mu.Lock()
	defer mu.Unlock()
	keys := map[string]int{}
	for _, put := range puts {
		key, obj, _ := strings.Cut(put, " ")
		if strings.HasSuffix(obj, ".parquet") {
			keys[key]++
		}
	}
	if keys["static"] != 0 || keys["?"] != 0 || len(keys) < 2 {
		t.Errorf("data files signed with %v; want vended keys renewed during the upload, never the static one", keys)
	}
}
