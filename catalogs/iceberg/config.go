package iceberg

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Property keys understood by the backend. Keys that iceberg-go already
// defines (uri, warehouse, token, credential, s3.*, ...) keep iceberg-go's
// spelling and are passed through to it.
const (
	// PropCatalogType selects the Iceberg catalog: "sql" (default) or "rest".
	PropCatalogType = "catalog-type"
	// PropURI is the catalog location. For sql: sqlite:////abs/path.db (as
	// SQLAlchemy and pyiceberg spell an absolute path; sqlite:///abs/path.db
	// is read as absolute too), or postgres://user:pw@host/db.
	// For rest: the base URL of the REST catalog.
	PropURI = "uri"
	// PropWarehouse is the root of table data: file:///abs/dir, /abs/dir
	// or s3://bucket/prefix.
	PropWarehouse = "warehouse"
	// PropToken is a bearer token for the REST catalog.
	PropToken = "token"
	// PropCredential is client_id:client_secret for the REST catalog's
	// OAuth2 client-credentials flow.
	PropCredential = "credential"
	// PropOAuth2ServerURI overrides the REST catalog's token endpoint.
	PropOAuth2ServerURI = "oauth2-server-uri"
	// PropCreateNamespaces lists namespaces (comma separated, levels
	// joined by dots) created at open time when missing.
	PropCreateNamespaces = "create-namespaces"
	// PropTargetFileSize is the data file size a stream rolls at, in bytes.
	PropTargetFileSize = "write.target-file-size-bytes"
	// PropMaxOpenFiles bounds the data files one upload into a
	// partitioned table keeps open at once (DefaultMaxOpenFiles); an
	// upload touching more partitions is written in passes (partcount.go).
	PropMaxOpenFiles = "write.max-open-files"
	// PropCommitGroupEnabled turns group commit on (default) or off:
	// concurrent commits to one table from this gateway are merged into
	// one snapshot per round.
	PropCommitGroupEnabled = "commit.group.enabled"
	// PropCommitGroupMaxMembers bounds the commits one round merges.
	PropCommitGroupMaxMembers = "commit.group.max-members"
	// PropMetadataCacheBytes bounds the parsed table metadata a SQL
	// catalog keeps between loads (metacache.go), in bytes of
	// metadata.json (DefaultMetadataCacheBytes); 0 turns the cache off.
	PropMetadataCacheBytes = "metadata-cache.max-bytes"

	// S3 properties, as iceberg-go names them.
	PropS3Endpoint        = "s3.endpoint"
	PropS3Region          = "s3.region"
	PropS3AccessKeyID     = "s3.access-key-id"
	PropS3SecretAccessKey = "s3.secret-access-key"
	PropS3SessionToken    = "s3.session-token"
)

// Catalog types.
const (
	TypeSQL  = "sql"
	TypeREST = "rest"
)

// The embedded default the server runs with.
const (
	// EmbeddedCatalogName is the catalog name of the embedded lake; it is
	// also the catalog_name pyiceberg's SqlCatalog must be given.
	EmbeddedCatalogName = "lake"
	// EmbeddedNamespace is created in the embedded lake when missing.
	EmbeddedNamespace = "default"
)

// EmbeddedProperties returns the properties of the embedded default: a SQL
// catalog in <dataDir>/catalog.db (SQLite) with its warehouse in
// <dataDir>/warehouse and the namespace "default". pyiceberg reads it with
// SqlCatalog("lake", uri="sqlite:////<abs dataDir>/catalog.db",
// warehouse="file:///<dataDir>/warehouse").
func EmbeddedProperties(dataDir string) (map[string]string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("data dir %q", dataDir))
	}
	// The warehouse URL holds the directory by its characters, unescaped:
	// every reader of the table's files (literalFS, Iceberg Java,
	// pyiceberg, DuckDB) reads a file URL so. '%', '#' and '?' have no
	// such spelling.
	if strings.ContainsAny(abs, "%#?") {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "data dir %q: a '%%', '#' or '?' in its path cannot be spelled in the warehouse's file URL", dataDir)
	}
	return map[string]string{
		PropCatalogType:      TypeSQL,
		PropURI:              "sqlite:///" + filepath.ToSlash(filepath.Join(abs, "catalog.db")),
		PropWarehouse:        "file://" + filepath.ToSlash(filepath.Join(abs, "warehouse")),
		PropCreateNamespaces: EmbeddedNamespace,
	}, nil
}

// config is the validated form of the properties.
type config struct {
	catalogType      string
	uri              string
	warehouse        string
	createNamespaces [][]string
	targetFileSize   int64
	maxOpenFiles     int
	metaCacheBytes   int64
	commit           lake.Retry
	group            groupPolicy
	remote           catalogs.RemotePolicy
	// passthrough is handed to iceberg-go (catalog and FileIO properties).
	passthrough map[string]string
}

// groupPolicy configures group commit.
type groupPolicy struct {
	enabled    bool
	maxMembers int
}

// exactKeys are the keys accepted as they are; passPrefixes are families of
// iceberg-go properties passed through unchanged.
var (
	exactKeys = map[string]bool{
		PropCatalogType: true, "type": true, PropURI: true, PropWarehouse: true,
		PropToken: true, PropCredential: true, PropOAuth2ServerURI: true,
		"scope": true, "audience": true, "resource": true, "prefix": true,
		"namespace-separator": true, "snapshot-loading-mode": true,
		PropCreateNamespaces: true, "init_catalog_tables": true,
	}
	passPrefixes = []string{"s3.", "client.", "rest.", "gcs.", "adls.", "header.",
		"table-default.", "table-override.", "jdbc.", "write.", "commit.", "remote."}
)

// parseConfig validates props and returns an ErrInvalidArgument naming the
// first bad key.
func parseConfig(props map[string]string) (config, error) {
	cfg := config{
		catalogType:    TypeSQL,
		targetFileSize: lake.DefaultTargetFileSize,
		maxOpenFiles:   DefaultMaxOpenFiles,
		metaCacheBytes: DefaultMetadataCacheBytes,
		group:          groupPolicy{enabled: true, maxMembers: 1000},
		passthrough:    map[string]string{},
	}
	own := map[string]bool{PropTargetFileSize: true, PropMaxOpenFiles: true, PropCommitGroupEnabled: true, PropCommitGroupMaxMembers: true,
		PropMetadataCacheBytes: true}
	for k := range props {
		ours := strings.HasPrefix(k, "remote.") || strings.HasPrefix(k, "commit.retry.") || strings.HasPrefix(k, "commit.group.")
		if lake.CommonKeys[k] {
			continue
		}
		if (ours && !own[k]) || (!exactKeys[k] && !own[k] && !hasAnyPrefix(k, passPrefixes)) {
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: unknown key", k)
		}
	}
	if t, ok := firstOf(props, PropCatalogType, "type"); ok {
		cfg.catalogType = strings.ToLower(t)
	}
	if cfg.catalogType != TypeSQL && cfg.catalogType != TypeREST {
		return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not sql or rest", PropCatalogType, cfg.catalogType)
	}
	cfg.uri = props[PropURI]
	if cfg.uri == "" {
		return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: required", PropURI)
	}
	cfg.warehouse = props[PropWarehouse]
	if cfg.catalogType == TypeSQL && cfg.warehouse == "" {
		return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: required for a sql catalog", PropWarehouse)
	}
	if cfg.warehouse != "" {
		if err := checkWarehouse(cfg.warehouse); err != nil {
			return cfg, err
		}
	}
	if cfg.catalogType == TypeREST {
		u, err := url.Parse(cfg.uri)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not an http(s) url", PropURI, cfg.uri)
		}
		if c := props[PropCredential]; c != "" && !strings.Contains(c, ":") {
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: expected client_id:client_secret", PropCredential)
		}
	}
	if ns := props[PropCreateNamespaces]; ns != "" {
		for _, n := range strings.Split(ns, ",") {
			n = strings.TrimSpace(n)
			levels := strings.Split(n, ".")
			for _, l := range levels {
				if l == "" {
					return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: empty namespace level in %q", PropCreateNamespaces, n)
				}
			}
			cfg.createNamespaces = append(cfg.createNamespaces, levels)
		}
	}
	var err error
	if cfg.commit, cfg.remote, err = lake.ParseCommon(props); err != nil {
		return cfg, err
	}
	err = lake.ParseInts(props,
		lake.IntProp{Key: PropTargetFileSize, Min: 1 << 10, Set: func(v int64) { cfg.targetFileSize = v }},
		lake.IntProp{Key: PropMaxOpenFiles, Min: 1, Set: func(v int64) { cfg.maxOpenFiles = int(v) }},
		lake.IntProp{Key: PropCommitGroupMaxMembers, Min: 1, Set: func(v int64) { cfg.group.maxMembers = int(v) }},
		lake.IntProp{Key: PropMetadataCacheBytes, Min: 0, Set: func(v int64) { cfg.metaCacheBytes = v }})
	if err != nil {
		return cfg, err
	}
	if err := lake.ParseBool(props, PropCommitGroupEnabled, &cfg.group.enabled); err != nil {
		return cfg, err
	}
	for k, v := range props {
		switch {
		case k == PropCatalogType || k == "type" || k == PropCreateNamespaces || strings.HasPrefix(k, "remote."):
		case k == PropURI && cfg.catalogType == TypeSQL:
		case strings.HasPrefix(k, "commit.retry.") || strings.HasPrefix(k, "commit.group.") || k == PropTargetFileSize || k == PropMetadataCacheBytes:
		default:
			cfg.passthrough[k] = v
		}
	}
	return cfg, err
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func firstOf(props map[string]string, keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := props[k]; ok && v != "" {
			return v, true
		}
	}
	return "", false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func checkWarehouse(w string) error {
	if strings.HasPrefix(w, "/") {
		return nil
	}
	u, err := url.Parse(w)
	if err != nil {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not a url: %v", PropWarehouse, w, err)
	}
	switch u.Scheme {
	case "file":
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q must be an absolute file url", PropWarehouse, w)
		}
	case "s3", "s3a", "s3n":
		if u.Host == "" {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q names no bucket", PropWarehouse, w)
		}
	default:
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: scheme %q is not file or s3", PropWarehouse, u.Scheme)
	}
	return nil
}

// sqlTarget turns a sql catalog uri into a database/sql driver, DSN and
// iceberg-go dialect. SQLite connections wait for locks instead of failing
// and take the write lock at BEGIN, which avoids upgrade deadlocks between
// concurrent committers.
func sqlTarget(uri string) (driver, dsn, dialect string, err error) {
	switch {
	case strings.HasPrefix(uri, "sqlite:///"):
		// SQLAlchemy (and so pyiceberg) spells an absolute path with four
		// slashes; three are read as absolute too, never as relative.
		path := strings.TrimPrefix(uri, "sqlite:///")
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		if strings.ContainsAny(path, "?#") {
			return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: sqlite path %q has a query", PropURI, path)
		}
		return "sqliteshim", "file:" + path + "?_pragma=busy_timeout(60000)&_pragma=journal_mode(WAL)&_txlock=immediate", "sqlite", nil
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		u, perr := url.Parse(uri)
		if perr != nil || u.Host == "" {
			return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: not a postgres url", PropURI)
		}
		u.Scheme = "postgres"
		return "pg", u.String(), "postgres", nil
	default:
		return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: expected sqlite:///path or postgres://host/db", PropURI)
	}
}
