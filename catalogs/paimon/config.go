package paimon

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Property keys understood by the backend.
const (
	// PropWarehouse is the root of the filesystem catalog: file:///abs/dir,
	// /abs/dir or s3://bucket/prefix. Databases are <warehouse>/<db>.db, tables
	// <warehouse>/<db>.db/<table>, as Paimon's FileSystemCatalog lays them
	// out.
	PropWarehouse = "warehouse"
	// PropCreateNamespaces lists databases (comma separated) created at
	// open time when missing.
	PropCreateNamespaces = "create-namespaces"
	// PropTargetFileSize is the data file size a stream rolls at, in bytes.
	PropTargetFileSize = "write.target-file-size-bytes"
	// PropWriteBufferSize bounds, in bytes, the rows of a primary-key
	// table a stream buffers (Arrow size, every bucket together) before
	// it sorts and writes the largest bucket's as a level-0 file. A
	// table's own write-buffer-size option (Paimon's) lowers it.
	PropWriteBufferSize = "write.buffer-size-bytes"
	// PropMaxOpenFiles bounds the data files a stream of an append table
	// keeps open (one per partition and bucket it writes); opening one
	// more first closes the least recently written.
	PropMaxOpenFiles = "write.max-open-files"
	// PropCommitRetries bounds the commit attempts after the first.
	PropCommitRetries = "commit.retry.num-retries"
	// PropCommitMinWait and PropCommitMaxWait bound the backoff between
	// commit attempts, in milliseconds.
	PropCommitMinWait = "commit.retry.min-wait-ms"
	PropCommitMaxWait = "commit.retry.max-wait-ms"
	// PropTableDefaultPrefix prefixes table options every new table gets
	// unless the create names them (table-default.bucket=4), as Paimon's
	// catalog option of the same name does.
	PropTableDefaultPrefix = "table-default."

	// S3 properties, spelled as the Iceberg backend (and iceberg-go)
	// spells them, for a warehouse s3://bucket/prefix.
	PropS3Endpoint        = lake.PropS3Endpoint
	PropS3Region          = lake.PropS3Region
	PropS3AccessKeyID     = lake.PropS3AccessKeyID
	PropS3SecretAccessKey = lake.PropS3SecretAccessKey
	PropS3SessionToken    = lake.PropS3SessionToken
	// PropS3ForceVirtualAddressing: "true" addresses the bucket as a host
	// name (bucket.endpoint), "false" as a path (endpoint/bucket). The
	// default is path style with s3.endpoint set, virtual without.
	PropS3ForceVirtualAddressing = lake.PropS3ForceVirtualAddressing

	// PropRemoteTimeout bounds one call to object storage, in ms.
	PropRemoteTimeout = "remote.timeout-ms"
	// PropRemoteAttempts bounds the attempts of an idempotent call.
	PropRemoteAttempts = "remote.max-attempts"
	// PropBreakerFailures consecutive failures open the circuit breaker.
	PropBreakerFailures = "remote.breaker.failures"
	// PropBreakerOpen is how long the open breaker refuses calls, in ms.
	PropBreakerOpen = "remote.breaker.open-ms"
)

// s3PartSize is the multipart part size of the S3 data files (0: the
// store's default); a variable for the tests only (SetS3PartSize).
var s3PartSize int

// config is the validated form of the properties.
type config struct {
	root             string         // local directory of the warehouse (local only)
	s3               *lake.S3Config // the bucket and client of an s3:// warehouse
	remote           catalogs.RemotePolicy
	createNamespaces []string
	targetFileSize   int64
	writeBuffer      int64
	maxOpenFiles     int
	commit           lake.Retry // the compare-and-swap loop's bounds (commit.retry.*)
	tableDefaults    map[string]string
	jdbc             *jdbcConfig // the JDBC metastore; nil for the filesystem catalog
}

const defaultTargetFileSize = 128 << 20

// Defaults of PropWriteBufferSize and PropMaxOpenFiles.
const (
	defaultWriteBuffer  = 64 << 20
	defaultMaxOpenFiles = 32
)

func parseConfig(props map[string]string) (config, error) {
	cfg := config{targetFileSize: defaultTargetFileSize, writeBuffer: defaultWriteBuffer, maxOpenFiles: defaultMaxOpenFiles, commit: lake.DefaultRetry,
		tableDefaults: map[string]string{},
		remote:        catalogs.RemotePolicy{Timeout: 30 * time.Second, Attempts: 3, BreakerFailures: 5, BreakerOpen: 30 * time.Second}}
	for k, v := range props {
		switch {
		case k == PropWarehouse || k == PropCreateNamespaces || k == "type" || k == "catalog-type" || k == PropMetastore:
		case lake.S3Keys[k], jdbcKeys[k]:
		case k == PropRemoteTimeout || k == PropRemoteAttempts || k == PropBreakerFailures || k == PropBreakerOpen:
		case strings.HasPrefix(k, PropTableDefaultPrefix):
			cfg.tableDefaults[strings.TrimPrefix(k, PropTableDefaultPrefix)] = v
		case k == PropTargetFileSize || k == PropWriteBufferSize || k == PropMaxOpenFiles || k == PropCommitRetries || k == PropCommitMinWait || k == PropCommitMaxWait:
		default:
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: unknown key", k)
		}
	}
	w := props[PropWarehouse]
	switch {
	case w == "":
		return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: required", PropWarehouse)
	case strings.HasPrefix(w, "/"):
		cfg.root = w
	case strings.HasPrefix(w, "s3://") || strings.HasPrefix(w, "s3a://"):
		s3c, err := lake.ParseS3(PropWarehouse, w, props)
		if err != nil {
			return cfg, err
		}
		s3c.PartSize = s3PartSize
		cfg.s3 = s3c
	default:
		u, err := url.Parse(w)
		if err != nil || u.Scheme != "file" || !strings.HasPrefix(u.Path, "/") {
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not an absolute path, file:// or s3:// url", PropWarehouse, w)
		}
		cfg.root = u.Path
	}
	if cfg.s3 == nil {
		for k := range props {
			if lake.S3Keys[k] {
				return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: the warehouse is not on s3", k)
			}
		}
	}
	if err := parseMetastore(&cfg, props); err != nil {
		return cfg, err
	}
	if ns := props[PropCreateNamespaces]; ns != "" {
		for _, n := range strings.Split(ns, ",") {
			n = strings.TrimSpace(n)
			if err := catalogs.ValidateName("namespace", n); err != nil {
				return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %w", PropCreateNamespaces, err)
			}
			cfg.createNamespaces = append(cfg.createNamespaces, n)
		}
	}
	ints := []struct {
		key string
		min int64
		dst func(int64)
	}{
		{PropTargetFileSize, 1 << 10, func(v int64) { cfg.targetFileSize = v }},
		{PropWriteBufferSize, 1 << 10, func(v int64) { cfg.writeBuffer = v }},
		{PropMaxOpenFiles, 1, func(v int64) { cfg.maxOpenFiles = int(min(v, 1<<20)) }},
		{PropCommitRetries, 0, func(v int64) { cfg.commit.Retries = int(v) }},
		{PropCommitMinWait, 1, func(v int64) { cfg.commit.MinWait = time.Duration(v) * time.Millisecond }},
		{PropCommitMaxWait, 1, func(v int64) { cfg.commit.MaxWait = time.Duration(v) * time.Millisecond }},
		{PropRemoteTimeout, 1, func(v int64) { cfg.remote.Timeout = time.Duration(v) * time.Millisecond }},
		{PropRemoteAttempts, 1, func(v int64) { cfg.remote.Attempts = int(v) }},
		{PropBreakerFailures, 1, func(v int64) { cfg.remote.BreakerFailures = uint32(min(v, 1<<31)) }},
		{PropBreakerOpen, 1, func(v int64) { cfg.remote.BreakerOpen = time.Duration(v) * time.Millisecond }},
	}
	for _, p := range ints {
		s, ok := props[p.key]
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < p.min || v > 1<<40 {
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not an integer in [%d, 2^40]", p.key, s, p.min)
		}
		p.dst(v)
	}
	if cfg.commit.MinWait > cfg.commit.MaxWait {
		return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: exceeds %q", PropCommitMinWait, PropCommitMaxWait)
	}
	return cfg, nil
}

// parseMetastore reads metastore (or its older spelling catalog-type):
// the JDBC metastore's properties are refused without it.
func parseMetastore(cfg *config, props map[string]string) error {
	key, m := PropMetastore, props[PropMetastore]
	if t, ok := props["catalog-type"]; ok {
		if m != "" && m != t {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q contradicts %q %q", "catalog-type", t, PropMetastore, m)
		}
		key, m = "catalog-type", t
	}
	switch m {
	case "", MetastoreFilesystem:
		for k := range props {
			if jdbcKeys[k] {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: only for %q %q", k, PropMetastore, MetastoreJDBC)
			}
		}
		return nil
	case MetastoreJDBC:
		j, err := parseJDBCConfig(props, cfg.s3 != nil)
		if err != nil {
			return err
		}
		cfg.jdbc = j
		return nil
	}
	return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not filesystem or jdbc (the Paimon catalogs this backend implements)", key, m)
}
