package iceberg

import (
	"context"
	"strconv"
	"strings"
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
		props, storage = l.Metadata.Properties, l.storageConfig()
	} else {
		tbl, err := p.load(ctx, t)
		if err != nil {
			return catalogs.SecurityContext{}, err
		}
		props = tbl.Properties()
	}
	sec := catalogs.SecurityContext{Encryption: encryptionOf(props)}
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

// encryptionOf maps table properties to an encryption level.
func encryptionOf(props map[string]string) catalogs.EncryptionLevel {
	km := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, PropKeyMetadataPrefix); ok && rest != "" {
			km[rest] = v
		}
	}
	switch {
	case len(km) > 0:
		return catalogs.EncryptionLevel{Kind: catalogs.EncryptionClientSide, KeyMetadata: km}
	case props[PropKMSKeyID] != "":
		return catalogs.EncryptionLevel{Kind: catalogs.EncryptionStorageLevel, KMSKeyARN: props[PropKMSKeyID]}
	}
	return catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone}
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
