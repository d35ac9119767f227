package iceberg_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// restStub answers the REST calls GetSecurityContext makes: OAuth2 client
// credentials, /v1/config with a prefix, and a table load that vends an S3
// session token expiring at *expiry.
func restStub(t *testing.T, expiry *atomic.Int64, loads *atomic.Int64) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/oauth/tokens", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("grant_type") != "client_credentials" || r.FormValue("client_id") != "gw" || r.FormValue("client_secret") != "s3cret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "cat-token", "token_type": "bearer", "expires_in": 3600})
	})
	mux.HandleFunc("GET /v1/config", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{"prefix": "ws"}})
	})
	mux.HandleFunc("GET /v1/ws/namespaces/{ns}/tables/{tbl}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer cat-token" || r.Header.Get("X-Iceberg-Access-Delegation") != "vended-credentials" {
			http.Error(w, `{"error":{"message":"no","type":"NotAuthorizedException","code":401}}`, http.StatusUnauthorized)
			return
		}
		if r.PathValue("ns") != "sales\x1feu" || r.PathValue("tbl") != "orders" {
			http.Error(w, `{"error":{"message":"no such table","type":"NoSuchTableException","code":404}}`, http.StatusNotFound)
			return
		}
		loads.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"metadata-location": "s3://bucket/sales/orders/metadata/00001.metadata.json",
			"metadata":          map[string]any{"properties": map[string]string{iceberg.PropKMSKeyID: "arn:aws:kms:eu-west-1:1:key/k"}},
			"config":            map[string]string{},
			"storage-credentials": []map[string]any{
				{"prefix": "s3://other/", "config": map[string]string{"s3.session-token": "wrong"}},
				{"prefix": "s3://bucket/sales/", "config": map[string]string{
					"s3.session-token":               "vended-" + strconv.FormatInt(loads.Load(), 10),
					"s3.session-token-expires-at-ms": strconv.FormatInt(expiry.Load(), 10)}},
			},
		})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVendedCredentials(t *testing.T) {
	var expiry, loads atomic.Int64
	expiry.Store(time.Now().Add(time.Hour).UnixMilli())
	srv := restStub(t, &expiry, &loads)
	ctx := context.Background()
	p, err := iceberg.Open(ctx, "remote", map[string]string{
		iceberg.PropCatalogType: "rest", iceberg.PropURI: srv.URL, iceberg.PropCredential: "gw:s3cret",
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: "remote", Namespace: []string{"sales", "eu"}, Name: "orders"}
	sec, err := p.GetSecurityContext(ctx, id)
	if err != nil {
		t.Fatalf("GetSecurityContext: %v", err)
	}
	if sec.Credentials.Token.Reveal() != "vended-1" || sec.Credentials.ExpiresAt.UnixMilli() != expiry.Load() {
		t.Errorf("credential = %v expiring %v, want the vended one", sec.Credentials.Token.Reveal(), sec.Credentials.ExpiresAt)
	}
	if sec.Encryption.Kind != catalogs.EncryptionStorageLevel || sec.Encryption.KMSKeyARN != "arn:aws:kms:eu-west-1:1:key/k" {
		t.Errorf("encryption = %+v", sec.Encryption)
	}
	// Never cached: the next call asks the catalog again.
	if sec, err = p.GetSecurityContext(ctx, id); err != nil || sec.Credentials.Token.Reveal() != "vended-2" {
		t.Errorf("second call = %v, %v; want a fresh credential", sec.Credentials.Token.Reveal(), err)
	}
	expiry.Store(time.Now().Add(-time.Minute).UnixMilli())
	if _, err := p.GetSecurityContext(ctx, id); !errors.Is(err, catalogs.ErrUnauthenticated) {
		t.Errorf("expired vended credential: %v, want ErrUnauthenticated", err)
	}
	missing := id
	missing.Name = "nope"
	if _, err := p.GetSecurityContext(ctx, missing); !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("unknown table: %v, want ErrNotFound", err)
	}
}
