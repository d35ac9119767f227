package delta_test

import (
	"bytes"
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
	"github.com/flightgw/flightgw/catalogs/delta"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

const bucket = "delta"

// TestConformanceS3: the suite on an in-memory S3 (gofakes3): commits are
// put-if-absent by If-None-Match, streamed data files multipart uploads.
func TestConformanceS3(t *testing.T) {
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	var n atomic.Int64
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		prefix := fmt.Sprintf("wh-%d", n.Add(1))
		props := map[string]string{
			delta.PropWarehouse: "s3://" + bucket + "/" + prefix, delta.PropCreateNamespaces: "default",
			lake.PropS3Endpoint: srv.URL, lake.PropS3Region: "us-east-1",
			lake.PropS3AccessKeyID: "test-access-key-id", lake.PropS3SecretAccessKey: "test-secret-access-key",
			lake.PropS3SessionToken: "test-session-token-1234567890", lake.PropS3ForceVirtualAddressing: "false",
			lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20", lake.PropCommitRetries: "1000",
		}
		open := func(t *testing.T) catalogs.Provider {
			p, err := delta.Open(context.Background(), "lake", props)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		return &catalogtest.Instance{
			Provider: open(t), Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) {
				res, err := be.ListBucket(bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix + "/"}, gofakes3.ListBucketPage{})
				if err != nil {
					return nil, err
				}
				var out []string
				for _, c := range res.Contents {
					if !strings.Contains(c.Key, "_delta_log") && !strings.HasSuffix(c.Key, ".flightgw-namespace") {
						out = append(out, c.Key)
					}
				}
				return out, nil
			},
			Replica: open,
		}
	}, Committers: 32}, catalogtest.Config{StagesFiles: true, CompareAndSwap: true, GroupsCommits: true,
		Layout: catalogtest.LayoutOneFilePerBucket, UnstorableType: arrow.FixedWidthTypes.MonthInterval})
}

// TestCheckpointAndVacuumS3: on S3 a checkpoint is written at version 10
// (and a fresh provider replays from it), and VACUUM deletes a staged
// file nothing commits, keeps the file an overwrite removed while its
// tombstone lasts, and deletes it once the tombstone expired.
func TestCheckpointAndVacuumS3(t *testing.T) {
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	props := map[string]string{
		delta.PropWarehouse: "s3://" + bucket + "/wh", delta.PropCreateNamespaces: "default",
		lake.PropS3Endpoint: srv.URL, lake.PropS3Region: "us-east-1",
		lake.PropS3AccessKeyID: "test-access-key-id", lake.PropS3SecretAccessKey: "test-secret-access-key",
		lake.PropS3ForceVirtualAddressing: "false",
	}
	ctx := context.Background()
	p, err := delta.Open(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	id := ident("default", "s3v")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	keys := func() map[string]bool {
		res, err := be.ListBucket(bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: "wh/default/s3v/"}, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, c := range res.Contents {
			out[strings.TrimPrefix(c.Key, "wh/default/s3v/")] = true
		}
		return out
	}
	write := func(from int64) catalogs.WriteReceipt {
		b := catalogtest.Batch(from, 1)
		defer b.Release()
		r, err := p.WriteBatch(ctx, id, b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := write(0)
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{first}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOverwrite(ctx, id, "", []catalogs.WriteReceipt{write(1)}); err != nil {
		t.Fatal(err)
	}
	for v := int64(3); v <= 10; v++ {
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{write(v)}); err != nil {
			t.Fatal(err)
		}
	}
	orphan := write(100)
	// The checkpoint is written by the commit round once its commits are
	// answered: Close waits for the rounds.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if k := keys(); !k["_delta_log/00000000000000000010.checkpoint.parquet"] || !k["_delta_log/_last_checkpoint"] {
		t.Fatalf("no checkpoint of version 10 on S3: %v", k)
	}
	fresh, err := delta.Open(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := scanAll(t, fresh, id); err != nil || n != 9 {
		t.Fatalf("a fresh provider scans %d rows, %v; want 9", n, err)
	}
	time.Sleep(20 * time.Millisecond)
	opts := catalogs.ReclaimOptions{MinAge: 10 * time.Millisecond}
	rel := func(r catalogs.WriteReceipt) string { return addPaths(t, r)[0] }
	if rep, err := p.Reclaim(ctx, opts); err != nil || rep.DataFiles != 1 || keys()[rel(orphan)] || !keys()[rel(first)] {
		t.Fatalf("reclaim: %+v, %v; want the staged file deleted, the overwritten one kept", rep, err)
	}
	delta.SetNow(p, func() time.Time { return time.Now().Add(8 * 24 * time.Hour) })
	if rep, err := p.Reclaim(ctx, opts); err != nil || rep.DataFiles != 1 || keys()[rel(first)] {
		t.Fatalf("reclaim 8 days on: %+v, %v; want the overwritten file deleted", rep, err)
	}
	if _, n, err := scanAll(t, fresh, id); err != nil || n != 9 {
		t.Fatalf("after VACUUM: %d rows, %v; want 9", n, err)
	}
}

// TestV2CheckpointS3: Spark's v2Checkpoint table (delta.checkpointInterval
// 4) uploaded to S3: the gateway reads it (Spark's UUID-named checkpoint
// and its sidecar), its appends at 7 and 8 put its own UUID-named
// checkpoint and sidecar at 8 on S3, a fresh provider reads every row
// from them; forty days on, VACUUM deletes Spark's checkpoint and its
// sidecar and keeps the gateway's, and the table still reads.
func TestV2CheckpointS3(t *testing.T) {
	const name = "v2checkpoint_parquet"
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	prefix := "wh/spark/" + name + "/"
	src := filepath.Join(sparkFixtures, name)
	var sparkSidecar string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if strings.HasPrefix(filepath.ToSlash(rel), "_delta_log/_sidecars/") {
			sparkSidecar = filepath.ToSlash(rel)
		}
		_, err = be.PutObject(bucket, prefix+filepath.ToSlash(rel), map[string]string{}, bytes.NewReader(b), int64(len(b)), nil)
		return err
	})
	if err != nil || sparkSidecar == "" {
		t.Fatalf("upload: %v (Spark's sidecar %q)", err, sparkSidecar)
	}
	props := map[string]string{
		delta.PropWarehouse: "s3://" + bucket + "/wh", delta.PropCreateNamespaces: "spark",
		lake.PropS3Endpoint: srv.URL, lake.PropS3Region: "us-east-1",
		lake.PropS3AccessKeyID: "test-access-key-id", lake.PropS3SecretAccessKey: "test-secret-access-key",
		lake.PropS3ForceVirtualAddressing: "false",
	}
	ctx := context.Background()
	p, err := delta.Open(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	keys := func() map[string]bool {
		res, err := be.ListBucket(bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, c := range res.Contents {
			out[strings.TrimPrefix(c.Key, prefix)] = true
		}
		return out
	}
	id := ident("spark", name)
	bs, rows, err := scanAll(t, p, id)
	if err != nil || rows == 0 {
		t.Fatalf("scan of Spark's table on S3: %d rows, %v", rows, err)
	}
	for range 2 {
		var rs []catalogs.WriteReceipt
		for _, b := range bs {
			r, err := p.WriteBatch(ctx, id, b)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		if _, err := p.Commit(ctx, id, rs); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil { // the checkpoint at 8
		t.Fatal(err)
	}
	var top, side []string
	for k := range keys() {
		if uuidCheckpoint.MatchString(strings.TrimPrefix(k, "_delta_log/")) && strings.HasPrefix(k, "_delta_log/"+dcodec.CommitName(8)[:20]) {
			top = append(top, k)
		}
		if strings.HasPrefix(k, "_delta_log/_sidecars/") && k != sparkSidecar {
			side = append(side, k)
		}
	}
	if len(top) != 1 || len(side) != 1 {
		t.Fatalf("the gateway's checkpoint at 8 on S3: %v, sidecars %v; want one of each", top, side)
	}
	fresh, err := delta.Open(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := scanAll(t, fresh, id); err != nil || n != 3*rows {
		t.Fatalf("a fresh provider scans %d rows, %v; want %d", n, err, 3*rows)
	}
	delta.SetNow(p, func() time.Time { return time.Now().Add(40 * 24 * time.Hour) })
	if _, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	k := keys()
	if k[sparkSidecar] || !k[side[0]] || !k[top[0]] || k["_delta_log/"+dcodec.CommitName(7)] {
		t.Fatalf("after VACUUM 40 days on: %v; want Spark's sidecar and the commits below 8 gone, the gateway's checkpoint and sidecar kept", k)
	}
	again, err := delta.Open(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := scanAll(t, again, id); err != nil || n != 3*rows {
		t.Fatalf("after VACUUM: %d rows, %v; want %d", n, err, 3*rows)
	}
}
