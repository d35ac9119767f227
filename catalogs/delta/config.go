package delta

import (
	"strings"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Property keys understood by the backend.
const (
	// PropWarehouse is the directory of the tables: /abs/dir, file:///abs/dir
	// or s3://bucket/prefix. A table is <warehouse>/<namespace>/<table>, a
	// directory holding _delta_log.
	PropWarehouse = "warehouse"
	// PropCreateNamespaces lists namespaces (comma separated) created at
	// open time when missing.
	PropCreateNamespaces = "create-namespaces"
	// PropTargetFileSize is the data file size a stream rolls at, in bytes.
	PropTargetFileSize = "write.target-file-size-bytes"
	// PropOptimizeTargetFileSize is the size OPTIMIZE bin-packs to, in
	// bytes, on tables without delta.targetFileSize (default
	// DefaultOptimizeTargetSize, delta-rs's 100 MiB).
	PropOptimizeTargetFileSize = "optimize.target-file-size-bytes"
	// PropCommitGroupEnabled turns group commit on (default) or off:
	// commits to one table from this process queue and land together,
	// one log version per round, one txn per commit.
	PropCommitGroupEnabled = "commit.group.enabled"
	// PropCommitGroupMaxMembers bounds the commits of one round.
	PropCommitGroupMaxMembers = "commit.group.max-members"
)

// config is the validated form of the properties.
type config struct {
	root             string
	s3               *lake.S3Config
	remote           catalogs.RemotePolicy
	createNamespaces []string
	targetFileSize   int64
	optimizeTarget   int64
	commit           lake.Retry
	group            struct {
		enabled    bool
		maxMembers int
	}
}

func parseConfig(props map[string]string) (config, error) {
	cfg := config{targetFileSize: lake.DefaultTargetFileSize, optimizeTarget: DefaultOptimizeTargetSize}
	cfg.group.enabled, cfg.group.maxMembers = true, 1000
	for k := range props {
		switch {
		case k == PropWarehouse || k == PropCreateNamespaces || k == PropTargetFileSize || k == "type",
			k == PropCommitGroupEnabled || k == PropCommitGroupMaxMembers || k == PropOptimizeTargetFileSize:
		case lake.S3Keys[k], lake.CommonKeys[k]:
		default:
			return cfg, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: unknown key", k)
		}
	}
	var err error
	if cfg.root, cfg.s3, err = lake.ParseWarehouse(PropWarehouse, props); err != nil {
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
	if err := lake.ParseInts(props,
		lake.IntProp{Key: PropTargetFileSize, Min: 1 << 10, Set: func(v int64) { cfg.targetFileSize = v }},
		lake.IntProp{Key: PropOptimizeTargetFileSize, Min: 1 << 10, Set: func(v int64) { cfg.optimizeTarget = v }},
		lake.IntProp{Key: PropCommitGroupMaxMembers, Min: 1, Set: func(v int64) { cfg.group.maxMembers = int(v) }}); err != nil {
		return cfg, err
	}
	return cfg, lake.ParseBool(props, PropCommitGroupEnabled, &cfg.group.enabled)
}
