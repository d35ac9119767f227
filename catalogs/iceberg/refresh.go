package iceberg

import (
	"context"
	"fmt"
	"maps"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/flightgw/flightgw/catalogs"
)

// refreshWindow is how long before a vended credential expires the
// writer asks the catalog for a new one.
var refreshWindow = time.Minute

// vendedCredentials are the S3 credentials a REST catalog vends for a
// table, asked for again (the load-table call) whenever the SDK finds the
// ones it holds within refreshWindow of their expiry. iceberg-go's FileIO
// takes the vended credentials of the table's load as static keys, which a
// long upload outlives.
type vendedCredentials struct {
	v *vendor
	t catalogs.TableIdent
}

// Retrieve implements aws.CredentialsProvider.
func (c vendedCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	l, err := c.v.load(ctx, c.t)
	if err != nil {
		return aws.Credentials{}, err
	}
	return s3Credentials(c.t, l.storageConfig())
}

// s3Credentials reads the S3 key pair and its expiry from FileIO
// properties.
func s3Credentials(t catalogs.TableIdent, cfg map[string]string) (aws.Credentials, error) {
	cred, _ := credentialOf(cfg)
	if cfg[PropS3AccessKeyID] == "" || cfg[PropS3SecretAccessKey] == "" {
		return aws.Credentials{}, catalogs.Errorf(catalogs.ErrUnauthenticated, "table %s: the catalog vends no S3 key pair", t)
	}
	if cred.Expired(time.Now()) {
		return aws.Credentials{}, catalogs.Errorf(catalogs.ErrUnauthenticated, "table %s: the catalog vends a credential expired at %s", t, cred.ExpiresAt.Format(time.RFC3339))
	}
	return aws.Credentials{AccessKeyID: cfg[PropS3AccessKeyID], SecretAccessKey: cfg[PropS3SecretAccessKey],
		SessionToken: cfg[PropS3SessionToken], Source: "flightgw vended credentials",
		CanExpire: !cred.ExpiresAt.IsZero(), Expires: cred.ExpiresAt}, nil
}

// refreshing returns tbl with a FileIO whose S3 credentials are the
// catalog's vended ones, renewed before they expire, when the catalog
// vends expiring S3 credentials for the table; else tbl as it is. The
// writer of an upload writes through it, so a DoPut longer than a
// credential's life goes on with the next one.
func (p *Provider) refreshing(ctx context.Context, t catalogs.TableIdent, tbl *table.Table) (*table.Table, error) {
	if p.vendor == nil {
		return tbl, nil
	}
	l, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (tableLoad, error) {
		return p.vendor.load(ctx, t)
	})
	if err != nil {
		return nil, err
	}
	storage := l.storageConfig()
	if cred, _ := credentialOf(storage); cred.ExpiresAt.IsZero() || storage[PropS3AccessKeyID] == "" {
		return tbl, nil // nothing expires, or not S3 keys: the table's own FileIO
	}
	first, err := s3Credentials(t, storage)
	if err != nil {
		return nil, err
	}
	// The FileIO's properties: the catalog's, the load's, the vended
	// ones, but no key pair, which iceberg-go would take as static
	// credentials over the context's provider.
	props := maps.Clone(p.cfg.passthrough)
	maps.Copy(props, l.Config)
	maps.Copy(props, storage)
	for _, k := range []string{PropS3AccessKeyID, PropS3SecretAccessKey, PropS3SessionToken} {
		delete(props, k)
	}
	// On top of ctx's configuration when there is one (encryptContext's
	// SSE-KMS), else iceberg-go's from the catalog's properties.
	base := utils.GetAwsConfig(ctx)
	if base == nil {
		b := p.aws.base(ctx, p.cfg.passthrough)
		if b.err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, b.err, "object storage: aws configuration")
		}
		base = b.cfg
	}
	cfg := base.Copy()
	cache := aws.NewCredentialsCache(primed{vendedCredentials{p.vendor, t}, first}, func(o *aws.CredentialsCacheOptions) {
		o.ExpiryWindow = refreshWindow
	})
	cfg.Credentials = cache
	loc := tbl.Location()
	fsF := func(ctx context.Context) (iceio.IO, error) {
		fsys, err := iceio.LoadFS(utils.WithAwsConfig(ctx, &cfg), props, loc)
		if err != nil {
			return nil, fmt.Errorf("table %s: storage with vended credentials: %w", t, err)
		}
		return fsys, nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, nil), nil
}

// primed hands out the credential of the table's load first, then asks
// the catalog: the first write needs no second load-table call.
type primed struct {
	next  aws.CredentialsProvider
	first aws.Credentials
}

func (p primed) Retrieve(ctx context.Context) (aws.Credentials, error) {
	if p.first.AccessKeyID != "" && (!p.first.CanExpire || time.Until(p.first.Expires) > refreshWindow) {
		return p.first, nil
	}
	return p.next.Retrieve(ctx)
}
