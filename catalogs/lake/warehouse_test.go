package lake

import (
	"errors"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

func TestParseWarehouse(t *testing.T) {
	for _, tc := range []struct {
		props    map[string]string
		root, s3 string // the local root, or the S3 bucket
		err      string // what the refusal names
	}{
		{props: map[string]string{"warehouse": "/data/wh"}, root: "/data/wh"},
		{props: map[string]string{"warehouse": "file:///data/wh"}, root: "/data/wh"},
		{props: map[string]string{"warehouse": "s3://lake/prefix", PropS3Region: "us-east-1"}, s3: "lake"},
		{props: map[string]string{}, err: `"warehouse": required`},
		{props: map[string]string{"warehouse": "relative/wh"}, err: "not an absolute path"},
		{props: map[string]string{"warehouse": "http://host/wh"}, err: "not an absolute path"},
		{props: map[string]string{"warehouse": "/data/wh", PropS3Endpoint: "http://127.0.0.1:9000"}, err: "the warehouse is not on s3"},
	} {
		root, s3, err := ParseWarehouse("warehouse", tc.props)
		switch {
		case tc.err != "":
			if err == nil || !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want InvalidArgument naming %q", tc.props, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.props, err)
		case root != tc.root || (tc.s3 != "") != (s3 != nil) || (s3 != nil && s3.bucket != tc.s3):
			t.Errorf("%v: root %q s3 %+v, want root %q bucket %q", tc.props, root, s3, tc.root, tc.s3)
		}
	}
}
