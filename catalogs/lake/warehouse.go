package lake

import (
	"context"
	"net/url"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
)

// ParseWarehouse reads a table format's warehouse, the property key of
// props: an absolute path or file:// URL (root), or an s3:// (s3a://)
// location with the s3.* properties (s3). s3.* properties beside a
// warehouse that is not on S3 are refused, as a typo would be.
func ParseWarehouse(key string, props map[string]string) (root string, s3 *S3Config, err error) {
	w := props[key]
	switch {
	case w == "":
		return "", nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: required", key)
	case strings.HasPrefix(w, "/"):
		root = w
	case strings.HasPrefix(w, "s3://") || strings.HasPrefix(w, "s3a://"):
		if s3, err = ParseS3(key, w, props); err != nil {
			return "", nil, err
		}
		return "", s3, nil
	default:
		u, err := url.Parse(w)
		if err != nil || u.Scheme != "file" || !strings.HasPrefix(u.Path, "/") {
			return "", nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not an absolute path, file:// or s3:// url", key, w)
		}
		root = u.Path
	}
	for k := range props {
		if S3Keys[k] {
			return "", nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: the warehouse is not on s3", k)
		}
	}
	return root, nil, nil
}

// OpenStore opens the store of a warehouse ParseWarehouse read: local
// files under root, or S3 (returned as s3 too, for its breaker's state)
// with remote bounding every call.
func OpenStore(ctx context.Context, root string, s3c *S3Config, remote catalogs.RemotePolicy) (Store, *S3, error) {
	if s3c == nil {
		return Local{Root: root}, nil, nil
	}
	s3, err := NewS3(ctx, s3c, remote)
	if err != nil {
		return nil, nil, err
	}
	return s3, s3, nil
}
