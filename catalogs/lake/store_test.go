package lake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// fakeS3 is an in-process S3 server (gofakes3 on memory, as
// integration/s3server serves it), whose conditional PUTs answer 409
// ConditionalRequestConflict while races > 0.
type fakeS3 struct {
	url   string
	races atomic.Int32
}

func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(be, gofakes3.WithAutoBucket(false)).Server()
	f := &fakeS3{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") == "*" && f.races.Add(-1) >= 0 {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, "<Error><Code>ConditionalRequestConflict</Code></Error>")
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeS3) store(t *testing.T, partSize int) *lake.S3 {
	t.Helper()
	c, err := lake.ParseS3("warehouse", "s3://lake/wh", map[string]string{lake.PropS3Endpoint: f.url,
		lake.PropS3Region: "us-east-1", lake.PropS3AccessKeyID: "id", lake.PropS3SecretAccessKey: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	c.PartSize = partSize
	s, err := lake.NewS3(context.Background(), c, catalogs.RemotePolicy{Timeout: 5 * time.Second, Attempts: 3,
		BreakerFailures: 2, BreakerOpen: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stores are the two stores every check runs against.
func stores(t *testing.T) map[string]lake.Store {
	return map[string]lake.Store{"local": lake.Local{Root: t.TempDir()}, "s3": newFakeS3(t).store(t, 5<<20)}
}

// TestCreateRace: eight writers put-if-absent one path at once, each its
// own bytes; exactly one wins, the others get ErrExists, and the object
// holds the winner's bytes whole.
func TestCreateRace(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for round := range 5 {
				path := fmt.Sprintf("t/snapshot/snapshot-%d", round)
				errs := make([]error, 8)
				var start, done sync.WaitGroup
				start.Add(1)
				for i := range errs {
					done.Add(1)
					go func() {
						defer done.Done()
						start.Wait()
						errs[i] = s.Create(ctx, path, []byte(fmt.Sprintf("writer %d of round %d", i, round)))
					}()
				}
				start.Done()
				done.Wait()
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("round %d: writers %d and %d both created %s", round, winner, i, path)
					case err == nil:
						winner = i
					case !errors.Is(err, lake.ErrExists):
						t.Fatalf("round %d: writer %d: %v, want ErrExists", round, i, err)
					}
				}
				if winner < 0 {
					t.Fatalf("round %d: no writer created %s", round, path)
				}
				got, err := s.Read(ctx, path)
				if want := fmt.Sprintf("writer %d of round %d", winner, round); err != nil || string(got) != want {
					t.Fatalf("round %d: %s holds %q, %v; want the winner's %q", round, path, got, err, want)
				}
			}
		})
	}
}

// TestS3ConditionalConflict: a 409 ConditionalRequestConflict (another
// conditional write of the key in flight) is a race, tried again: a few
// of them and the write lands; more and the write is lost (ErrExists,
// for the caller's compare-and-swap loop to reload), never an outage the
// breaker counts.
func TestS3ConditionalConflict(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		races int32
		want  error
	}{{1, nil}, {3, nil}, {10, lake.ErrExists}}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.races), func(t *testing.T) {
			f := newFakeS3(t)
			s := f.store(t, 0)
			f.races.Store(c.races)
			err := s.Create(ctx, "t/snapshot/snapshot-1", []byte("one"))
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("Create after %d conflicts = %v, want %v", c.races, err, c.want)
			}
			if st := s.Breaker(); st != catalogs.BreakerClosed {
				t.Errorf("breaker %v after conflicts, want closed (a race is no outage)", st)
			}
			f.races.Store(0)
			if err := s.Create(ctx, "t/snapshot/snapshot-1", []byte("two")); (c.want == nil) != errors.Is(err, lake.ErrExists) {
				t.Errorf("second Create = %v", err)
			}
		})
	}
}

// TestStreamAndRangedRead: an object streamed in parts (on S3 a multipart
// upload, with the part size at S3's minimum) reads back whole and by
// ranges; Walk lists it with its size and a recent modification time; an
// object the writer never closed is not there.
func TestStreamAndRangedRead(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), (12<<20)/16+3) // over two 5 MiB parts
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			w, err := s.Writer(ctx, "t/data/f.parquet")
			if err != nil {
				t.Fatal(err)
			}
			for b := data; len(b) > 0; b = b[min(len(b), 1<<20):] {
				if _, err := w.Write(b[:min(len(b), 1<<20)]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			o, err := s.Open(ctx, "t/data/f.parquet")
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			if o.Size() != int64(len(data)) {
				t.Fatalf("size %d, want %d", o.Size(), len(data))
			}
			for _, off := range []int64{0, 5<<20 - 3, int64(len(data)) - 10} {
				buf := make([]byte, 10)
				if n, err := o.ReadAt(buf, off); n != 10 || (err != nil && err != io.EOF) || !bytes.Equal(buf, data[off:off+10]) {
					t.Errorf("ReadAt(%d) = %d, %v, %q; want %q", off, n, err, buf[:n], data[off:off+10])
				}
			}
			var seen []string
			err = s.Walk(ctx, "t", func(rel string, size int64, mod time.Time) error {
				seen = append(seen, rel)
				if size != int64(len(data)) || time.Since(mod) > time.Minute || time.Until(mod) > time.Minute {
					t.Errorf("Walk: %s size %d, modified %v", rel, size, mod)
				}
				return nil
			})
			if err != nil || strings.Join(seen, ",") != "data/f.parquet" {
				t.Errorf("Walk = %v, %v; want data/f.parquet", seen, err)
			}
		})
	}
}
