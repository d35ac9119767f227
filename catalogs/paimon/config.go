package paimon

import (
	"strings"

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

// Defaults of PropWriteBufferSize and PropMaxOpenFiles.
const (
	defaultWriteBuffer  = 64 << 20
	defaultMaxOpenFiles = 32
)

func parseConfig(props map[string]string) (config, error) {
	cfg := config{targetFileSize: lake.DefaultTargetFileSize, writeBuffer: defaultWriteBuffer, maxOpenFiles: defaultMaxOpenFiles,
		tableDefaults: map[string]string{}}
	for k, v := range props {
		switch {
		case k == PropWarehouse || k == PropCreateNamespaces || k == "type" || k == "catalog-type" || k == PropMetastore:
		case lake.S3Keys[k], jdbcKeys[k]:
		case lake.CommonKeys[k]:
		case strings.HasPrefix(k, PropTableDefaultPrefix):
			cfg.tableDefaults[strings.TrimPrefix(k, PropTableDefaultPrefix)] = v
		case k == PropTargetFileSize || k == PropWriteBufferSize || k == PropMaxOpenFiles:
		default:
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: unknown key", k)
		}
	}
	var err error
	if cfg.root, cfg.s3, err = lake.ParseWarehouse(PropWarehouse, props); err != nil {
		return cfg, err
	}
	if cfg.s3 != nil {
		cfg.s3.PartSize = s3PartSize
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
	if cfg.commit, cfg.remote, err = lake.ParseCommon(props); err != nil {
		return cfg, err
	}
	err = lake.ParseInts(props,
		lake.IntProp{Key: PropTargetFileSize, Min: 1 << 10, Set: func(v int64) { cfg.targetFileSize = v }},
		lake.IntProp{Key: PropWriteBufferSize, Min: 1 << 10, Set: func(v int64) { cfg.writeBuffer = v }},
		lake.IntProp{Key: PropMaxOpenFiles, Min: 1, Set: func(v int64) { cfg.maxOpenFiles = int(min(v, 1<<20)) }})
	return cfg, err
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
