package paimon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/flightgw/flightgw/catalogs"
)

// s3Keys are the s3.* properties the backend understands.
var s3Keys = map[string]bool{PropS3Endpoint: true, PropS3Region: true, PropS3AccessKeyID: true,
	PropS3SecretAccessKey: true, PropS3SessionToken: true, PropS3ForceVirtualAddressing: true}

// s3Config is an s3:// warehouse: its bucket, key prefix and client
// settings. The keys and the token are Secrets, so that printing a config
// (or an error quoting it) never shows them.
type s3Config struct {
	bucket, prefix string
	endpoint       string
	region         string
	accessKeyID    catalogs.Secret
	secretKey      catalogs.Secret
	sessionToken   catalogs.Secret
	pathStyle      bool
}

func parseS3Config(w string, props map[string]string) (*s3Config, error) {
	u, err := url.Parse(w)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not s3://bucket/prefix", PropWarehouse, w)
	}
	prefix := strings.Trim(u.Path, "/")
	if _, err := join(prefix); prefix != "" && err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %v", PropWarehouse, err)
	}
	c := &s3Config{bucket: u.Host, prefix: prefix, endpoint: props[PropS3Endpoint], region: props[PropS3Region],
		accessKeyID: catalogs.NewSecret(props[PropS3AccessKeyID]), secretKey: catalogs.NewSecret(props[PropS3SecretAccessKey]),
		sessionToken: catalogs.NewSecret(props[PropS3SessionToken])}
	if c.accessKeyID.IsZero() != c.secretKey.IsZero() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q and %q: give both or neither", PropS3AccessKeyID, PropS3SecretAccessKey)
	}
	if !c.sessionToken.IsZero() && c.accessKeyID.IsZero() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: needs %q and %q", PropS3SessionToken, PropS3AccessKeyID, PropS3SecretAccessKey)
	}
	if c.endpoint != "" {
		if e, err := url.Parse(c.endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not an http(s) url", PropS3Endpoint, c.endpoint)
		}
	}
	// As iceberg-go decides: path style for a custom endpoint (MinIO and
	// the like), virtual hosts for AWS, unless told.
	c.pathStyle = c.endpoint != ""
	if v, ok := props[PropS3ForceVirtualAddressing]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not true or false", PropS3ForceVirtualAddressing, v)
		}
		c.pathStyle = !b
	}
	return c, nil
}

// s3FS is a warehouse in an S3 bucket. Every call goes through the
// storage breaker with a timeout; idempotent ones are retried. The SDK's
// own retries are off, so that the bound is the one configured here.
type s3FS struct {
	cfg    *s3Config
	client *s3.Client
	remote *catalogs.Remote
}

// s3PartSize is the part size of a streamed data file: S3's minimum part
// is 5 MiB, and one part is what an open data file holds in memory. A
// variable for the tests only.
var s3PartSize = 8 << 20

func newS3FS(ctx context.Context, c *s3Config, policy catalogs.RemotePolicy) (*s3FS, error) {
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		// Only what S3 requires: S3-compatible stores do not all take
		// the streaming trailer checksums the SDK would add.
		awsconfig.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		awsconfig.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if c.region != "" {
		opts = append(opts, awsconfig.WithRegion(c.region))
	}
	if !c.accessKeyID.IsZero() {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			c.accessKeyID.Reveal(), c.secretKey.Reveal(), c.sessionToken.Reveal())))
	}
	ac, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, "s3 client configuration")
	}
	if ac.Region == "" {
		ac.Region = "us-east-1"
	}
	client := s3.NewFromConfig(ac, func(o *s3.Options) {
		if c.endpoint != "" {
			o.BaseEndpoint = aws.String(c.endpoint)
		}
		o.UsePathStyle = c.pathStyle
	})
	return &s3FS{cfg: c, client: client, remote: catalogs.NewRemote("storage", policy, isTransientS3)}, nil
}

// errRejected marks a request S3 refused for a reason repeating it does
// not change (a 4xx other than the ones with a meaning here).
var errRejected = errors.New("rejected by s3")

// isTransientS3 reports whether a failed call may succeed if repeated:
// server errors, throttling, timeouts and the network.
func isTransientS3(err error) bool {
	return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) &&
		!errors.Is(err, errExists) && !errors.Is(err, errRejected)
}

// classify turns an SDK error into one the backend tests: 404 is
// fs.ErrNotExist, 403 fs.ErrPermission, 412 (a conditional put that
// found the object) errExists. op and key name the call in the message.
func (s *s3FS) classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("s3 %s s3://%s/%s", op, s.cfg.bucket, key)
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch code := re.HTTPStatusCode(); {
		case code == 404:
			return fmt.Errorf("%s: %w: %w", what, fs.ErrNotExist, err)
		case code == 403 || code == 401:
			return fmt.Errorf("%s: %w: %w", what, fs.ErrPermission, err)
		case code == 412:
			return fmt.Errorf("%s: %w: %w", what, errExists, err)
		case code == 408 || code == 429 || code >= 500:
			return fmt.Errorf("%s: %w", what, err)
		case code >= 400:
			return fmt.Errorf("%s: %w: %w", what, errRejected, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// guardS3 runs fn through the storage breaker (catalogs.Guard); a call
// the open breaker refused is ErrUnavailable.
func guardS3[T any](ctx context.Context, r *catalogs.Remote, idempotent bool, fn func(context.Context) (T, error)) (T, error) {
	v, err := catalogs.Guard(ctx, r, idempotent, fn)
	if catalogs.ErrBreakerOpen(err) {
		err = catalogs.Wrap(catalogs.ErrUnavailable, err, "s3 storage breaker open")
	}
	return v, err
}

// key is the object key of a warehouse path.
func (s *s3FS) key(p string) string {
	switch {
	case s.cfg.prefix == "":
		return p
	case p == "":
		return s.cfg.prefix
	}
	return s.cfg.prefix + "/" + p
}

// dirKey is the key prefix of the objects under a warehouse directory.
func (s *s3FS) dirKey(dir string) string {
	if k := s.key(dir); k != "" {
		return k + "/"
	}
	return ""
}

func (s *s3FS) local(string) (string, bool) { return "", false }

func (s *s3FS) read(ctx context.Context, p string) ([]byte, error) {
	k := s.key(p)
	return guardS3(ctx, s.remote, true, func(ctx context.Context) ([]byte, error) {
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.bucket, Key: &k})
		if err != nil {
			return nil, s.classify("get", k, err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return b, s.classify("get", k, err)
	})
}

// create is a conditional PUT with If-None-Match: *, which S3 answers with
// 412 Precondition Failed when the key exists: the compare-and-swap of a
// commit. It is retried like an idempotent call; a retry that finds the
// object reads it back, and the same bytes mean that the attempt whose
// reply was lost wrote it (a snapshot holds its commit user and time, so
// another committer's never has the same bytes).
func (s *s3FS) create(ctx context.Context, p string, data []byte) error {
	k := s.key(p)
	tried := false
	_, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
		retry := tried
		tried = true
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.bucket, Key: &k,
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), IfNoneMatch: aws.String("*")})
		err = s.classify("conditional put", k, err)
		if retry && errors.Is(err, errExists) {
			if got, rerr := s.readOnce(ctx, k); rerr == nil && bytes.Equal(got, data) {
				return struct{}{}, nil
			}
		}
		return struct{}{}, err
	})
	return err
}

// readOnce reads k within an attempt that is already guarded.
func (s *s3FS) readOnce(ctx context.Context, k string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.bucket, Key: &k})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// put replaces an object: S3 PUTs are atomic, readers see the old or the
// new object.
func (s *s3FS) put(ctx context.Context, p string, data []byte) error {
	k := s.key(p)
	_, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.bucket, Key: &k,
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
		return struct{}{}, s.classify("put", k, err)
	})
	return err
}

func (s *s3FS) remove(ctx context.Context, p string) error {
	k := s.key(p)
	_, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.cfg.bucket, Key: &k})
		if err = s.classify("delete", k, err); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		return struct{}{}, err
	})
	return err
}

// removeAll deletes every object under dir, a thousand per request.
func (s *s3FS) removeAll(ctx context.Context, dir string) error {
	keys, err := s.listKeys(ctx, s.dirKey(dir), false)
	if err != nil {
		return err
	}
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		ids := make([]types.ObjectIdentifier, n)
		for i, k := range keys[:n] {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		keys = keys[n:]
		_, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
			out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &s.cfg.bucket,
				Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
			if err == nil && len(out.Errors) > 0 {
				e := out.Errors[0]
				err = fmt.Errorf("%d objects not deleted, the first %s: %s", len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Message))
			}
			return struct{}{}, s.classify("delete objects", s.dirKey(dir), err)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// listKeys lists the keys under prefix; with delim, only the level
// directly under it, the "directories" as common prefixes.
func (s *s3FS) listKeys(ctx context.Context, prefix string, delim bool) ([]string, error) {
	var out []string
	var token *string
	for {
		in := &s3.ListObjectsV2Input{Bucket: &s.cfg.bucket, Prefix: aws.String(prefix), ContinuationToken: token}
		if delim {
			in.Delimiter = aws.String("/")
		}
		page, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
			o, err := s.client.ListObjectsV2(ctx, in)
			return o, s.classify("list", prefix, err)
		})
		if err != nil {
			return nil, err
		}
		for _, c := range page.Contents {
			out = append(out, aws.ToString(c.Key))
		}
		for _, c := range page.CommonPrefixes {
			out = append(out, aws.ToString(c.Prefix))
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return out, nil
		}
		token = page.NextContinuationToken
	}
}

func (s *s3FS) list(ctx context.Context, dir string) ([]string, error) {
	prefix := s.dirKey(dir)
	keys, err := s.listKeys(ctx, prefix, true)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		n := strings.TrimSuffix(strings.TrimPrefix(k, prefix), "/")
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// exists is true for an object and for a "directory", a prefix with an
// object under it.
func (s *s3FS) exists(ctx context.Context, p string) (bool, error) {
	k := s.key(p)
	_, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.cfg.bucket, Key: &k})
		return struct{}{}, s.classify("head", k, err)
	})
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	prefix := s.dirKey(p)
	page, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
		o, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.cfg.bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
		return o, s.classify("list", prefix, err)
	})
	if err != nil {
		return false, err
	}
	return len(page.Contents) > 0, nil
}
