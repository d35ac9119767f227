package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/flightgw/flightgw/catalogs"
)

// PropTableKeyID is Iceberg's table encryption (client side: data files
// under Parquet modular encryption, manifests and manifest lists
// encrypted, the key metadata in the table metadata's encryption-keys):
// the id of the table's master key in the KMS.
const PropTableKeyID = "encryption.key-id"

// writeEncryption is how the gateway must write a table's files.
type writeEncryption struct {
	// kmsKey, when set, is the KMS key every S3 object write of the table
	// (data file, manifest, manifest list, metadata file) carries as
	// SSE-KMS.
	kmsKey string
}

// encryptionFor decides how the files of a table with metadata meta at
// location loc are written: SSE-KMS under encryption.kms-key-id on S3.
// A table that asks for client-side encryption (Iceberg's
// encryption.key-id, key metadata, encryption keys in its metadata) is
// ErrFailedPrecondition naming the table and the reason: iceberg-go
// writes neither Parquet modular encryption nor encrypted manifests, and
// the gateway never writes such a table in plaintext. So is a KMS key on
// storage other than S3, which has no server-side encryption to ask for.
func encryptionFor(t string, props map[string]string, meta table.Metadata, loc string) (writeEncryption, error) {
	refuse := func(why string) (writeEncryption, error) {
		return writeEncryption{}, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: %s; the gateway does not write it", t, why)
	}
	if k := props[PropTableKeyID]; k != "" {
		return refuse(fmt.Sprintf("it requires client-side encryption (%s %q: Parquet modular encryption and encrypted manifests)", PropTableKeyID, k))
	}
	for k := range props {
		if strings.HasPrefix(k, PropKeyMetadataPrefix) {
			return refuse(fmt.Sprintf("it requires client-side encryption (key metadata %s)", k))
		}
	}
	if meta != nil {
		for key := range meta.EncryptionKeys() {
			return refuse(fmt.Sprintf("it requires client-side encryption (its metadata holds encryption key %q)", key.KeyID))
		}
	}
	key := props[PropKMSKeyID]
	if key == "" {
		return writeEncryption{}, nil
	}
	l, err := resolveLocation(loc)
	if err != nil {
		return writeEncryption{}, catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: location refused: %v", t, err)
	}
	if !strings.HasPrefix(l.store, "s3://") {
		return refuse(fmt.Sprintf("%s asks for server-side encryption, which its storage %s does not have (only S3's SSE-KMS)", PropKMSKeyID, l.store))
	}
	return writeEncryption{kmsKey: key}, nil
}

// level is the encryption level the writer applies.
func (e writeEncryption) level() catalogs.EncryptionLevel {
	if e.kmsKey != "" {
		return catalogs.EncryptionLevel{Kind: catalogs.EncryptionStorageLevel, KMSKeyARN: e.kmsKey}
	}
	return catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone}
}

// tableEncryption is encryptionFor of a loaded table.
func tableEncryption(t catalogs.TableIdent, tbl *table.Table) (writeEncryption, error) {
	return encryptionFor(t.String(), tbl.Properties(), tbl.Metadata(), tbl.Location())
}

// awsBase holds the AWS configuration the gateway's own S3 clients
// (SSE-KMS writes, refreshed vended credentials) start from: iceberg-go's,
// parsed once from the catalog's FileIO properties.
type awsBase struct {
	once sync.Once
	cfg  *aws.Config
	err  error
}

// base parses the configuration on first use.
func (b *awsBase) base(ctx context.Context, props map[string]string) *awsBase {
	b.once.Do(func() { b.cfg, b.err = s3.ParseAWSConfig(context.WithoutCancel(ctx), props) })
	return b
}

// context returns ctx with what iceberg-go's S3 FileIO needs to write as
// enc says. iceberg-go's S3 IO has no SSE property; it takes an AWS
// configuration from the context (utils.WithAwsConfig) as the base of
// every client it builds (the table's own s3.* credentials, vended ones
// included, and region still override it), so the configuration carries a
// middleware that sets SSE-KMS and the key on every object write the
// client makes: PutObject, and CreateMultipartUpload for the large files
// the uploader splits. Every FileIO of the table built under ctx — the
// data file writer's, the commit's manifests and manifest list, a SQL
// catalog's metadata file — writes encrypted.
func (p *Provider) encryptContext(ctx context.Context, enc writeEncryption) (context.Context, error) {
	if enc.kmsKey == "" {
		return ctx, nil
	}
	base := utils.GetAwsConfig(ctx)
	if base == nil {
		b := p.aws.base(ctx, p.cfg.passthrough)
		if b.err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, b.err, "object storage: aws configuration")
		}
		base = b.cfg
	}
	cfg := base.Copy()
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), sseKMS(enc.kmsKey))
	return utils.WithAwsConfig(ctx, &cfg), nil
}

// sseKMS sets SSE-KMS with key on the object writes of an S3 client.
func sseKMS(key string) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("flightgw.sse-kms",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				switch p := in.Parameters.(type) {
				case *awss3.PutObjectInput:
					p.ServerSideEncryption, p.SSEKMSKeyId = s3types.ServerSideEncryptionAwsKms, aws.String(key)
				case *awss3.CreateMultipartUploadInput:
					p.ServerSideEncryption, p.SSEKMSKeyId = s3types.ServerSideEncryptionAwsKms, aws.String(key)
				case *awss3.CopyObjectInput:
					p.ServerSideEncryption, p.SSEKMSKeyId = s3types.ServerSideEncryptionAwsKms, aws.String(key)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
}
