package iceberg

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// Table properties that declare how a table's files are encrypted.
const (
	// PropKMSKeyID names the KMS key of server-side (storage level)
	// encryption: it maps to EncryptionStorageLevel with that key.
	PropKMSKeyID = "encryption.kms-key-id"
	// PropKeyMetadataPrefix prefixes client-side encryption settings
	// (encryption.key-metadata.<k>): a table with any is refused
	// (encryptionFor).
	PropKeyMetadataPrefix = "encryption.key-metadata."
)

// Where REST catalogs put the expiry of vended credentials.
var expiryKeys = []string{"s3.session-token-expires-at-ms", "expiration-time", "gcs.oauth2.token-expires-at", "adls.sas-token-expires-at-ms"}

// GetSecurityContext returns the table's encryption level and credential.
//
// Encryption is what the gateway's writer applies to the table
// (encryptionFor): encryption.kms-key-id on S3 → StorageLevel{kms key},
// every S3 write carrying SSE-KMS with it; else None. A table the writer
// refuses (client-side encryption, a KMS key on storage without SSE) is
// the same ErrFailedPrecondition here: the gateway hands out no context
// for writes it would not make.
//
// The credential, read afresh on every call and never cached: for a REST
// catalog, the storage credential it vends for the table (S3 session
// token, GCS OAuth token or ADLS SAS token, with the expiry the catalog
// states); otherwise, or when the catalog vends none, what the catalog
// configuration holds (s3.session-token, else the REST bearer token). An
// expired credential is ErrUnauthenticated. The scope is read-write on the
// table.
func (p *Provider) GetSecurityContext(ctx context.Context, t catalogs.TableIdent) (catalogs.SecurityContext, error) {
	var props, storage map[string]string
	var meta table.Metadata
	var loc string
	if p.vendor != nil {
		if _, err := p.ident(t); err != nil {
			return catalogs.SecurityContext{}, err
		}
		l, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (tableLoad, error) {
			return p.vendor.load(ctx, t)
		})
		if err != nil {
			return catalogs.SecurityContext{}, err
		}
		props, storage, loc = l.Metadata.Properties, l.storageConfig(), l.location()
		if len(l.Metadata.EncryptionKeys) > 0 {
			return catalogs.SecurityContext{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"table %s: it requires client-side encryption (its metadata holds encryption keys); the gateway does not write it", t)
		}
	} else {
		tbl, err := p.load(ctx, t)
		if err != nil {
			return catalogs.SecurityContext{}, err
		}
		props, meta, loc = tbl.Properties(), tbl.Metadata(), tbl.Location()
	}
	enc, err := encryptionFor(t.String(), props, meta, loc)
	if err != nil {
		return catalogs.SecurityContext{}, err
	}
	sec := catalogs.SecurityContext{Encryption: enc.level()}
	cred, ok := credentialOf(storage)
	if !ok {
		cred, _ = credentialOf(p.cfg.passthrough)
		if cred.Token.IsZero() {
			cred.Token = catalogs.NewSecret(p.cfg.passthrough[PropToken])
		}
	}
	if cred.Expired(time.Now()) {
		return catalogs.SecurityContext{}, catalogs.Errorf(catalogs.ErrUnauthenticated, "table %s: credential expired at %s", t, cred.ExpiresAt.Format(time.RFC3339))
	}
	scope := t
	cred.Scope = catalogs.CredentialScope{Kind: catalogs.ScopeTableReadWrite, Table: &scope}
	sec.Credentials = cred
	return sec, nil
}

// credentialOf finds a storage token and its expiry in FileIO properties;
// ok is false when there is none.
func credentialOf(cfg map[string]string) (catalogs.CatalogCredential, bool) {
	var cred catalogs.CatalogCredential
	tok := cfg[PropS3SessionToken]
	if tok == "" {
		tok = cfg["gcs.oauth2.token"]
	}
	if tok == "" {
		for k, v := range cfg {
			if strings.HasPrefix(k, "adls.sas-token.") && v != "" {
				tok = v
				break
			}
		}
	}
	for _, k := range expiryKeys {
		v := cfg[k]
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			cred.ExpiresAt = time.UnixMilli(ms).UTC()
			break
		}
		if ts, err := time.Parse(time.RFC3339, v); err == nil {
			cred.ExpiresAt = ts.UTC()
			break
		}
	}
	cred.Token = catalogs.NewSecret(tok)
	return cred, tok != ""
}
