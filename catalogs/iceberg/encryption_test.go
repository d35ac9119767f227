package iceberg_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// objectWrite is one object write the S3 server saw: the key and its
// server-side encryption headers.
type objectWrite struct {
	key, sse, kmsKey string
}

// recordingS3 is newFakeS3 with a record of every object write (PUT, and
// the POST that starts a multipart upload).
func recordingS3(t *testing.T) (*fakeS3, func() []objectWrite) {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		writes []objectWrite
	)
	h := gofakes3.New(be).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut || (r.Method == http.MethodPost && r.URL.Query().Has("uploads")) {
			mu.Lock()
			writes = append(writes, objectWrite{key: r.URL.Path, sse: r.Header.Get("X-Amz-Server-Side-Encryption"),
				kmsKey: r.Header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id")})
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &fakeS3{backend: be, url: srv.URL}, func() []objectWrite {
		mu.Lock()
		defer mu.Unlock()
		return append([]objectWrite(nil), writes...)
	}
}

// TestSSEKMSOnEveryWrite: a table created with encryption.kms-key-id on
// S3 has every object the gateway writes for it — data files, manifests,
// manifest lists, metadata files, through appends and a replace — written
// with SSE-KMS and the key; a table without the property in the same
// catalog is written without; GetSecurityContext reports the key.
func TestSSEKMSOnEveryWrite(t *testing.T) {
	const key = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	s3, writes := recordingS3(t)
	ctx := context.Background()
	p, err := iceberg.Open(ctx, "lake", s3.props(t, "sse"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	enc := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "secret"}
	plain := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "plain"}
	if _, err := p.CreateTable(ctx, enc, catalogtest.Schema, map[string]string{iceberg.PropKMSKeyID: key}); err != nil {
		t.Fatalf("create with %s: %v", iceberg.PropKMSKeyID, err)
	}
	if _, err := p.CreateTable(ctx, plain, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []catalogs.TableIdent{enc, plain} {
		for i := range int64(2) {
			b := catalogtest.Batch(i*10, 10)
			r, err := p.WriteBatch(ctx, id, b)
			b.Release()
			if err != nil {
				t.Fatalf("%s: write: %v", id, err)
			}
			if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
				t.Fatalf("%s: commit: %v", id, err)
			}
		}
		s, err := p.OpenReplaceStream(ctx, id, catalogtest.Schema)
		if err != nil {
			t.Fatal(err)
		}
		b := catalogtest.Batch(100, 5)
		err = s.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		receipts, err := s.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.CommitOverwrite(ctx, id, "replace-"+id.Name, receipts); err != nil {
			t.Fatalf("%s: replace: %v", id, err)
		}
	}
	kinds := map[string]map[string]int{}
	for _, w := range writes() {
		table := ""
		switch {
		case strings.Contains(w.key, "/secret/"):
			table = "secret"
		case strings.Contains(w.key, "/plain/"):
			table = "plain"
		default:
			continue
		}
		kind := "other"
		for _, k := range []string{".parquet", ".avro", ".metadata.json"} {
			if strings.HasSuffix(w.key, k) {
				kind = k
				break
			}
		}
		if kinds[table] == nil {
			kinds[table] = map[string]int{}
		}
		kinds[table][kind]++
		switch table {
		case "secret":
			if w.sse != "aws:kms" || w.kmsKey != key {
				t.Errorf("write of %s: x-amz-server-side-encryption %q, key id %q; want aws:kms and %s", w.key, w.sse, w.kmsKey, key)
			}
		case "plain":
			if w.sse != "" || w.kmsKey != "" {
				t.Errorf("write of %s (no key) carries SSE %q key %q", w.key, w.sse, w.kmsKey)
			}
		}
	}
	for _, table := range []string{"secret", "plain"} {
		// Three data files; three commits, each a manifest and a manifest
		// list; the metadata files of the create and of each commit.
		if k := kinds[table]; k[".parquet"] < 3 || k[".avro"] < 6 || k[".metadata.json"] < 4 || k["other"] > 0 {
			t.Errorf("table %s: object writes by kind %v; want data files, manifests, manifest lists and metadata files", table, k)
		}
	}
	sec, err := p.GetSecurityContext(ctx, enc)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Encryption.Kind != catalogs.EncryptionStorageLevel || sec.Encryption.KMSKeyARN != key {
		t.Errorf("security context encryption %+v, want storage level with %s", sec.Encryption, key)
	}
	if sec, err = p.GetSecurityContext(ctx, plain); err != nil || sec.Encryption.Kind != catalogs.EncryptionNone {
		t.Errorf("plain table: security context %+v, %v; want no encryption", sec.Encryption, err)
	}
}

// TestClientSideEncryptionRefused: the options of client-side encryption
// are refused at create, naming the option.
func TestClientSideEncryptionRefused(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "cse"}
	_, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{iceberg.PropTableKeyID: "master"})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), iceberg.PropTableKeyID) || !strings.Contains(err.Error(), "client-side encryption") {
		t.Errorf("create with %s = %v, want InvalidArgument naming it", iceberg.PropTableKeyID, err)
	}
	// A KMS key on local files: no server-side encryption to ask for.
	_, err = p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{iceberg.PropKMSKeyID: "k"})
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), id.String()) || !strings.Contains(err.Error(), "file://") {
		t.Errorf("create with %s on local files = %v, want FailedPrecondition naming the table and the storage", iceberg.PropKMSKeyID, err)
	}
}
