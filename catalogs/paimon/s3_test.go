package paimon_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

const bucket = "paimon"

// fakeS3 is an in-process S3 server (gofakes3 on memory). gofakes3 1.2.0
// honours If-None-Match: * on PUT under its bucket lock (412 when the key
// exists), which is the conditional put the backend's commits rely on;
// TestS3ConditionalPut checks it through the backend.
type fakeS3 struct {
	backend *s3mem.Backend
	url     string
	n       atomic.Int64
	// fail, when set, answers every request with 503 (an outage).
	fail atomic.Bool
}

func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	if err := f.backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(f.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.fail.Load() {
			http.Error(w, "<Error><Code>ServiceUnavailable</Code></Error>", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeS3) list(prefix string) ([]string, error) {
	res, err := f.backend.ListBucket(bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, gofakes3.ListBucketPage{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(res.Contents))
	for _, c := range res.Contents {
		out = append(out, strings.TrimPrefix(c.Key, prefix))
	}
	return out, nil
}

const sessionToken = "fake-s3-session-token-0123456789"

func (f *fakeS3) props(prefix string) map[string]string {
	return map[string]string{
		paimon.PropWarehouse:         "s3://" + bucket + "/" + prefix,
		paimon.PropCreateNamespaces:  "default",
		paimon.PropS3Endpoint:        f.url,
		paimon.PropS3Region:          "us-east-1",
		paimon.PropS3AccessKeyID:     "test-access-key-id",
		paimon.PropS3SecretAccessKey: "test-secret-access-key",
		// A session token, so that the suite sees a real one never print.
		paimon.PropS3SessionToken:           sessionToken,
		paimon.PropS3ForceVirtualAddressing: "false",
		lake.PropCommitMinWait:              "1", lake.PropCommitMaxWait: "20",
	}
}

func (f *fakeS3) open(t *testing.T, extra map[string]string) (*paimon.Provider, string) {
	t.Helper()
	prefix := fmt.Sprintf("wh-%d", f.n.Add(1))
	props := f.props(prefix)
	for k, v := range extra {
		props[k] = v
	}
	p, err := paimon.Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	return p, prefix + "/"
}

// The S3 side of the cross-checks with Paimon Java and pypaimon (make
// paimon-s3-check): TestWriteSamples and TestReadJavaTables take s3://
// warehouses on integration/s3server, which hands its command the endpoint
// and test credentials in S3_ENDPOINT, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_REGION.
var samplesExpected = flag.String("samples-expected", "", "with an s3:// -samples-out: the local directory for the expected rows")

// s3SamplePartSize is the multipart part size of the S3 samples: 800
// bytes, under most of their data files (0.7 to 1.7 KiB), so that the
// readers get files assembled from two parts as well as single PUTs
// (gofakes3 takes parts under S3's 5 MiB minimum).
const s3SamplePartSize = 800

func isS3(warehouse string) bool { return strings.HasPrefix(warehouse, "s3://") }

// sampleProps are the properties of a cross-check warehouse, local or on
// the S3 server named by the environment, with extra.
func sampleProps(t *testing.T, warehouse string, extra map[string]string) map[string]string {
	t.Helper()
	props := map[string]string{paimon.PropWarehouse: warehouse}
	if isS3(warehouse) {
		ep := os.Getenv("S3_ENDPOINT")
		if ep == "" {
			t.Fatal("an s3:// warehouse needs S3_ENDPOINT (run under integration/s3server)")
		}
		props[paimon.PropS3Endpoint] = ep
		props[paimon.PropS3Region] = os.Getenv("AWS_REGION")
		props[paimon.PropS3AccessKeyID] = os.Getenv("AWS_ACCESS_KEY_ID")
		props[paimon.PropS3SecretAccessKey] = os.Getenv("AWS_SECRET_ACCESS_KEY")
		props[paimon.PropS3ForceVirtualAddressing] = "false"
	}
	maps.Copy(props, extra)
	return props
}

// TestAppendJavaTables commits onto the tables Paimon Java wrote (run by
// make paimon-s3-check after TestReadJavaTables, with -java-warehouse and
// -samples-expected): five rows into each, updating keys 0-4 of the
// primary-key table, and writes what each then holds for `Main
// verify-tables` to read back with Java, which also checks the bucket of
// every row the gateway placed in j_fixed.
func TestAppendJavaTables(t *testing.T) {
	if *javaWarehouse == "" || *samplesExpected == "" {
		t.Skip("-java-warehouse and -samples-expected not set")
	}
	ctx := context.Background()
	p, err := paimon.Open(ctx, "lake", sampleProps(t, *javaWarehouse, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(*samplesExpected, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range javaSampleTables {
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: name}
		first := int64(20)
		if name == "j_pk" {
			first = 0
		}
		rows := rowsFrom(first, 5, 2)
		b := sampleBatch(rows)
		r, err := p.WriteBatch(ctx, id, b)
		b.Release()
		if err != nil {
			t.Fatalf("%s: write: %v", name, err)
		}
		if _, err := p.CommitOnce(ctx, id, name+"-gateway", []catalogs.WriteReceipt{r}); err != nil {
			t.Fatalf("%s: commit: %v", name, err)
		}
		byID := map[int64]string{}
		for _, r := range append(javaSampleRows(name), rows...) {
			byID[r.id] = r.render()
		}
		var want []string
		for _, v := range byID {
			want = append(want, v)
		}
		slices.Sort(want)
		if got := scanRendered(t, p, id); !slices.Equal(got, want) {
			t.Errorf("%s: the backend reads %v, want %v", name, got, want)
		}
		body := fmt.Sprintf("ROWS %d\n%s\n", len(want), strings.Join(want, "\n"))
		if err := os.WriteFile(filepath.Join(*samplesExpected, name+".txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConformanceS3(t *testing.T) {
	s3 := newFakeS3(t)
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		p, prefix := s3.open(t, nil)
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return s3.list(prefix) },
		}
	}}, conformance())
}

// TestS3ConcurrentCommitters: committers racing on one table through the
// conditional put; each commit lands once, the snapshots have no gaps,
// and at least one commit lost a race (a 412) and retried.
func TestS3ConcurrentCommitters(t *testing.T) {
	s3 := newFakeS3(t)
	p, _ := s3.open(t, map[string]string{lake.PropCommitRetries: "1000"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "race"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	const writers, commits = 4, 5
	var retried atomic.Int64
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for c := range commits {
				b := catalogtest.Batch(int64(w*1000+c*10), 2)
				r, err := p.WriteBatch(ctx, id, b)
				b.Release()
				if err == nil {
					var out catalogs.CommitOutcome
					out, err = p.CommitOnce(ctx, id, fmt.Sprintf("w%d-c%d", w, c), []catalogs.WriteReceipt{r})
					retried.Add(int64(out.Retried))
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if spec.CurrentSnapshotID == nil || *spec.CurrentSnapshotID != writers*commits {
		t.Fatalf("current snapshot %v, want %d", spec.CurrentSnapshotID, writers*commits)
	}
	if retried.Load() == 0 {
		t.Errorf("no commit retried: the conditional put never refused a racing snapshot")
	}
	res, err := p.Scan(ctx, id, catalogs.ScanRequest{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	rows := 0
	for res.Reader.Next() {
		rows += res.Reader.RecordBatch().Column(0).(*array.Int64).Len()
	}
	if rows != writers*commits*2 {
		t.Errorf("%d rows, want %d", rows, writers*commits*2)
	}
}

// TestS3LargeFile: a data file over one part goes up as a multipart
// upload and reads back whole.
func TestS3LargeFile(t *testing.T) {
	s3 := newFakeS3(t)
	p, prefix := s3.open(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "big"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	defer paimon.SetS3PartSize(5 << 20)()
	const n = 300_000 // random strings: over 5 MiB of Parquet
	b := randomBatch(n)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
	objs, err := s3.backend.ListBucket(bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix + "default.db/big/bucket-0/"}, gofakes3.ListBucketPage{})
	if err != nil || len(objs.Contents) != 1 || objs.Contents[0].Size <= 5<<20 {
		t.Fatalf("data files %+v (%v): want one over a part (5 MiB)", objs, err)
	}
	res, err := p.Scan(ctx, id, catalogs.ScanRequest{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	var rows, sum int64
	for res.Reader.Next() {
		for _, v := range res.Reader.RecordBatch().Column(0).(*array.Int64).Int64Values() {
			rows++
			sum += v
		}
	}
	if rows != n || sum != n*(n-1)/2 {
		t.Errorf("%d rows summing to %d, want %d summing to %d", rows, sum, n, int64(n)*(n-1)/2)
	}
}

// TestS3Outage: with the server down, calls fail as ErrUnavailable
// without showing a key or the token, and the storage breaker opens.
func TestS3Outage(t *testing.T) {
	var logs strings.Builder
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	s3 := newFakeS3(t)
	p, _ := s3.open(t, map[string]string{lake.PropRemoteAttempts: "2", lake.PropBreakerFailures: "3",
		lake.PropBreakerOpen: "60000", lake.PropRemoteTimeout: "2000"})
	ctx := context.Background()
	s3.fail.Store(true)
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "down"}
	var last error
	for range 3 {
		_, last = p.GetTableSpec(ctx, id)
		if !errors.Is(last, catalogs.ErrUnavailable) {
			t.Fatalf("GetTableSpec with S3 down: %v, want ErrUnavailable", last)
		}
	}
	if got := p.Breakers(); len(got) != 1 || got[0].State != catalogs.BreakerOpen {
		t.Errorf("breakers %+v after an outage, want storage open", got)
	}
	_, err := p.GetTableSpec(ctx, id)
	if !errors.Is(err, catalogs.ErrUnavailable) || !strings.Contains(err.Error(), "breaker open") {
		t.Errorf("GetTableSpec with the breaker open: %v", err)
	}
	all := fmt.Sprintf("%v %+v %#v %s", last, err, p, logs.String())
	for _, secret := range []string{sessionToken, "test-secret-access-key", "test-access-key-id"} {
		if strings.Contains(all, secret) {
			t.Errorf("a secret shows in errors or logs: %q", secret)
		}
	}
}

func TestS3Config(t *testing.T) {
	for name, tc := range map[string]struct {
		props map[string]string
		want  string
	}{
		"no bucket":          {map[string]string{paimon.PropWarehouse: "s3:///x"}, "warehouse"},
		"key without secret": {map[string]string{paimon.PropWarehouse: "s3://b/x", paimon.PropS3AccessKeyID: "k"}, "s3.secret-access-key"},
		"bad addressing":     {map[string]string{paimon.PropWarehouse: "s3://b/x", paimon.PropS3ForceVirtualAddressing: "maybe"}, "s3.force-virtual-addressing"},
		"bad endpoint":       {map[string]string{paimon.PropWarehouse: "s3://b/x", paimon.PropS3Endpoint: "ftp://h"}, "s3.endpoint"},
		"s3 key on local":    {map[string]string{paimon.PropWarehouse: "/tmp/x", paimon.PropS3Region: "eu"}, "s3.region"},
		"unknown s3 key":     {map[string]string{paimon.PropWarehouse: "s3://b/x", "s3.bogus": "1"}, "s3.bogus"},
		"token, secret never echoed": {map[string]string{paimon.PropWarehouse: "s3://b/x",
			paimon.PropS3SessionToken: sessionToken, paimon.PropS3SecretAccessKey: "test-secret-access-key"}, "s3.access-key-id"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := paimon.Open(context.Background(), "lake", tc.props)
			if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want ErrInvalidArgument naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), sessionToken) || strings.Contains(err.Error(), "test-secret-access-key") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

// randomBatch is catalogtest.Schema's rows 0..n-1 with random strings,
// which zstd cannot shrink much.
func randomBatch(n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, catalogtest.Schema)
	defer b.Release()
	buf := make([]byte, 24)
	for i := range n {
		_, _ = rand.Read(buf)
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(base64.StdEncoding.EncodeToString(buf))
	}
	return b.NewRecordBatch()
}
