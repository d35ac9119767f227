package lake

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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/flightgw/flightgw/catalogs"
)

// The s3.* properties of an S3 warehouse, as iceberg-go's io package
// spells them (the Iceberg and Paimon backends read the same names).
const (
	PropS3Endpoint        = "s3.endpoint"
	PropS3Region          = "s3.region"
	PropS3AccessKeyID     = "s3.access-key-id"
	PropS3SecretAccessKey = "s3.secret-access-key"
	PropS3SessionToken    = "s3.session-token"
	// PropS3ForceVirtualAddressing: "true" addresses the bucket as a host
	// (bucket.endpoint), "false" as a path (endpoint/bucket); the
	// default is path style with s3.endpoint set, virtual without.
	PropS3ForceVirtualAddressing = "s3.force-virtual-addressing"
)

// S3Keys are the s3.* properties ParseS3 understands.
var S3Keys = map[string]bool{PropS3Endpoint: true, PropS3Region: true, PropS3AccessKeyID: true,
	PropS3SecretAccessKey: true, PropS3SessionToken: true, PropS3ForceVirtualAddressing: true}

// DefaultS3PartSize is the part size of a streamed object: S3's minimum
// part is 5 MiB, and one part is what an open object holds in memory.
const DefaultS3PartSize = 8 << 20

// S3Config is an s3:// warehouse: its bucket, key prefix and client
// settings. The keys and the token are Secrets, so that printing a config
// (or an error quoting it) never shows them.
type S3Config struct {
	bucket, prefix string
	endpoint       string
	region         string
	accessKeyID    catalogs.Secret
	secretKey      catalogs.Secret
	// SessionToken is the temporary credential's token (vended to
	// readers as is).
	SessionToken catalogs.Secret
	pathStyle    bool
	// PartSize is the multipart part size of a streamed object (0:
	// DefaultS3PartSize); tests lower it to reach a multipart upload with
	// a few MiB.
	PartSize int
}

// ParseS3 parses the warehouse w (s3://bucket/prefix, the value of the
// property warehouseProp) and the s3.* properties of props.
func ParseS3(warehouseProp, w string, props map[string]string) (*S3Config, error) {
	u, err := url.Parse(w)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not s3://bucket/prefix", warehouseProp, w)
	}
	prefix := strings.Trim(u.Path, "/")
	if _, err := Join(prefix); prefix != "" && err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %v", warehouseProp, err)
	}
	c := &S3Config{bucket: u.Host, prefix: prefix, endpoint: props[PropS3Endpoint], region: props[PropS3Region],
		accessKeyID: catalogs.NewSecret(props[PropS3AccessKeyID]), secretKey: catalogs.NewSecret(props[PropS3SecretAccessKey]),
		SessionToken: catalogs.NewSecret(props[PropS3SessionToken])}
	if c.accessKeyID.IsZero() != c.secretKey.IsZero() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q and %q: give both or neither", PropS3AccessKeyID, PropS3SecretAccessKey)
	}
	if !c.SessionToken.IsZero() && c.accessKeyID.IsZero() {
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

// S3 is a warehouse in an S3 bucket. Every call goes through the
// storage breaker with a timeout; idempotent ones are retried. The SDK's
// own retries are off, so that the bound is the one configured here.
type S3 struct {
	cfg      *S3Config
	client   *s3.Client
	remote   *catalogs.Remote
	partSize int
}

// NewS3 opens the bucket of c, its calls bounded by policy.
func NewS3(ctx context.Context, c *S3Config, policy catalogs.RemotePolicy) (*S3, error) {
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
			c.accessKeyID.Reveal(), c.secretKey.Reveal(), c.SessionToken.Reveal())))
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
	part := c.PartSize
	if part <= 0 {
		part = DefaultS3PartSize
	}
	return &S3{cfg: c, client: client, remote: catalogs.NewRemote("storage", policy, isTransientS3), partSize: part}, nil
}

// Breaker is the state of the storage's circuit breaker.
func (s *S3) Breaker() catalogs.BreakerState { return s.remote.State() }

// errRejected marks a request S3 refused for a reason repeating it does
// not change (a 4xx other than the ones with a meaning here).
var errRejected = errors.New("rejected by s3")

// errRace marks a conditional write S3 answered 409 ConditionalRequestConflict:
// another conditional write of the key was in flight. Neither outcome is
// known; Create tries again (a 412 then says the other won).
var errRace = errors.New("conditional write raced another")

// isTransientS3 reports whether a failed call may succeed if repeated:
// server errors, throttling, timeouts and the network. A race is the
// callers' business, not the storage's failure: Guard neither retries
// nor counts it.
func isTransientS3(err error) bool {
	return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) &&
		!errors.Is(err, ErrExists) && !errors.Is(err, errRejected) && !errors.Is(err, errRace)
}

// classify turns an SDK error into one the backend tests: 404 is
// fs.ErrNotExist, 403 fs.ErrPermission, 412 (a conditional put that
// found the object) ErrExists, 409 (a conditional put that raced
// another) errRace. op and key name the call in the message.
func (s *S3) classify(op, key string, err error) error {
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
			return fmt.Errorf("%s: %w: %w", what, ErrExists, err)
		case code == 409:
			return fmt.Errorf("%s: %w: %w", what, errRace, err)
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
func (s *S3) key(p string) string {
	switch {
	case s.cfg.prefix == "":
		return p
	case p == "":
		return s.cfg.prefix
	}
	return s.cfg.prefix + "/" + p
}

// dirKey is the key prefix of the objects under a warehouse directory.
func (s *S3) dirKey(dir string) string {
	if k := s.key(dir); k != "" {
		return k + "/"
	}
	return ""
}

func (s *S3) Local(string) (string, bool) { return "", false }

func (s *S3) Read(ctx context.Context, p string) ([]byte, error) {
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

// maxRaces bounds the 409 answers Create takes before it reports the
// write lost (ErrExists): the caller's compare-and-swap loop then reloads
// and tries again from what landed.
const maxRaces = 4

// Create is a conditional PUT with If-None-Match: *, which S3 answers with
// 412 Precondition Failed when the key exists: the compare-and-swap of a
// commit. It is retried like an idempotent call; a retry that finds the
// object reads it back, and the same bytes mean that the attempt whose
// reply was lost wrote it (a snapshot holds its commit user and time, so
// another committer's never has the same bytes). A 409 (another
// conditional write of the key in flight) is tried again after a pause.
func (s *S3) Create(ctx context.Context, p string, data []byte) error {
	var err error
	for i := range maxRaces {
		if i > 0 {
			if werr := catalogs.Sleep(ctx, catalogs.Backoff(i-1, 20*time.Millisecond, 500*time.Millisecond)); werr != nil {
				return werr
			}
		}
		if err = s.createOnce(ctx, p, data); !errors.Is(err, errRace) {
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrExists, err)
}

func (s *S3) createOnce(ctx context.Context, p string, data []byte) error {
	k := s.key(p)
	tried := false
	_, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
		retry := tried
		tried = true
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.bucket, Key: &k,
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), IfNoneMatch: aws.String("*")})
		err = s.classify("conditional put", k, err)
		if retry && errors.Is(err, ErrExists) {
			if got, rerr := s.readOnce(ctx, k); rerr == nil && bytes.Equal(got, data) {
				return struct{}{}, nil
			}
		}
		return struct{}{}, err
	})
	return err
}

// readOnce reads k within an attempt that is already guarded.
func (s *S3) readOnce(ctx context.Context, k string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.bucket, Key: &k})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// Put replaces an object: S3 PUTs are atomic, readers see the old or the
// new object.
func (s *S3) Put(ctx context.Context, p string, data []byte) error {
	k := s.key(p)
	_, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.bucket, Key: &k,
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
		return struct{}{}, s.classify("put", k, err)
	})
	return err
}

func (s *S3) Remove(ctx context.Context, p string) error {
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

// RemoveAll deletes every object under dir, a thousand per request.
func (s *S3) RemoveAll(ctx context.Context, dir string) error {
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
func (s *S3) listKeys(ctx context.Context, prefix string, delim bool) ([]string, error) {
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

func (s *S3) List(ctx context.Context, dir string) ([]string, error) {
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

// Exists is true for an object and for a "directory", a prefix with an
// object under it.
func (s *S3) Exists(ctx context.Context, p string) (bool, error) {
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
