package delta_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	"github.com/flightgw/flightgw/catalogs/lake"
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
