package iceberg

import (
	"context"
	"strconv"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// Table properties that declare how a table's files are encrypted.
const (
	// PropKMSKeyID names the KMS key of server-side (storage level)
	// encryption: it maps to EncryptionStorageLevel with that key.
	PropKMSKeyID = "encryption.kms-key-id"
	// PropKeyMetadataPrefix prefixes client-side encryption settings: any
	// table property encryption.key-metadata.<k> maps to
	// EncryptionClientSide with key_metadata[<k>].
	PropKeyMetadataPrefix = "encryption.key-metadata."
)

// Where REST catalogs put the expiry of vended credentials.
var expiryKeys = []string{"s3.session-token-expires-at-ms", "expiration-time", "gcs.oauth2.token-expires-at", "adls.sas-token-expires-at-ms"}

// GetSecurityContext returns the table's encryption level and credential.
//
// Encryption comes from table properties: encryption.kms-key-id →
// StorageLevel{kms key}; encryption.key-metadata.* → ClientSide; else None.
// The credential is what the catalog configuration holds: an S3 session
// token (with s3.session-token-expires-at-ms as its expiry), else the REST
// bearer token, else none. It is read afresh on every call, never cached,
// and an expired credential is reported as ErrUnauthenticated. The scope is
// read-write on the table.
func (p *Provider) GetSecurityContext(ctx context.Context, t catalogs.TableIdent) (catalogs.SecurityContext, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return catalogs.SecurityContext{}, err
	}
	props := tbl.Properties()
	sec := catalogs.SecurityContext{Encryption: catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone}}
	km := map[string]string{}
	for k, v := range props {
		if len(k) > len(PropKeyMetadataPrefix) && k[:len(PropKeyMetadataPrefix)] == PropKeyMetadataPrefix {
			km[k[len(PropKeyMetadataPrefix):]] = v
		}
	}
	switch {
	case len(km) > 0:
		sec.Encryption = catalogs.EncryptionLevel{Kind: catalogs.EncryptionClientSide, KeyMetadata: km}
	case props[PropKMSKeyID] != "":
		sec.Encryption = catalogs.EncryptionLevel{Kind: catalogs.EncryptionStorageLevel, KMSKeyARN: props[PropKMSKeyID]}
	}
	cfg := p.cfg.passthrough
	tok := cfg[PropS3SessionToken]
	if tok == "" {
		tok = cfg[PropToken]
	}
	cred := catalogs.CatalogCredential{Token: catalogs.NewSecret(tok)}
	for _, k := range expiryKeys {
		if ms, err := strconv.ParseInt(cfg[k], 10, 64); err == nil && ms > 0 {
			cred.ExpiresAt = time.UnixMilli(ms).UTC()
			break
		}
	}
	if cred.Expired(time.Now()) {
		return catalogs.SecurityContext{}, catalogs.Errorf(catalogs.ErrUnauthenticated, "table %s: catalog credential expired at %s", t, cred.ExpiresAt.Format(time.RFC3339))
	}
	scope := t
	cred.Scope = catalogs.CredentialScope{Kind: catalogs.ScopeTableReadWrite, Table: &scope}
	sec.Credentials = cred
	return sec, nil
}
