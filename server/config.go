package server

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/duration"
	"github.com/flightgw/flightgw/txn"
)

// Defaults of the embedded gateway.
const (
	DefaultListen               = "127.0.0.1:32010"
	DefaultDataDir              = "./data"
	DefaultCatalogName          = "lake"
	DefaultSchema               = handlers.DefaultSchema
	DefaultMaxBatchBytes        = 256 << 20
	DefaultMaxRequestBytes      = 4 << 20
	DefaultShutdownGrace        = 30 * time.Second
	DefaultTxnIdleTimeout       = txn.DefaultIdleTimeout
	DefaultMaxConcurrentWrites  = 8
	DefaultMaxConcurrentQueries = 16
	DefaultQueryQueueWait       = handlers.DefaultQueryQueueWait
	DefaultQueueWait            = 30 * time.Second
	DefaultMaxQueuedStreams     = 256
	DefaultMinStreamRate        = 16 << 10
	DefaultGCPercent            = 30
	DefaultGCMinHeap            = 144 << 20
	DefaultReclaimInterval      = time.Hour
	DefaultReclaimMinAge        = 24 * time.Hour
	DefaultStreamIdle           = 60 * time.Second
	DefaultPreparedPerSession   = 256
)

// Config is the gateway configuration (YAML, see docs/configuration.md).
type Config struct {
	Listen string `yaml:"listen"`
	// DataDir holds the embedded catalog (catalog.db and warehouse/).
	DataDir string `yaml:"data_dir"`
	// Insecure allows a non-loopback listener without authentication.
	Insecure       bool                 `yaml:"insecure"`
	Log            LogConfig            `yaml:"log"`
	DefaultCatalog string               `yaml:"default_catalog"`
	DefaultSchema  string               `yaml:"default_schema"`
	Catalogs       []CatalogConfig      `yaml:"catalogs"`
	Auth           auth.Config          `yaml:"auth"`
	Limits         Limits               `yaml:"limits"`
	Timeouts       Timeouts             `yaml:"timeouts"`
	Engine         EngineConfig         `yaml:"engine"`
	Tickets        TicketsConfig        `yaml:"tickets"`
	TLS            TLSConfig            `yaml:"tls"`
	Cluster        ClusterConfig        `yaml:"cluster"`
	Health         HealthConfig         `yaml:"health"`
	Debug          DebugConfig          `yaml:"debug"`
	Reclaim        ReclaimConfig        `yaml:"reclaim"`
	CommitMessages CommitMessagesConfig `yaml:"commit_messages"`
	Maintenance    MaintenanceConfig    `yaml:"maintenance"`
}

// CommitMessagesConfig configures the distributed-commit actions
// (docs/commit-messages.md).
type CommitMessagesConfig struct {
	// TTL is how long a PrepareCommit payload can be committed (default
	// half of reclaim.min_age). It must be below reclaim.min_age while the
	// reclaimer runs: the reclaimer deletes staged files no snapshot
	// references once they are older than min_age, and a payload committed
	// after that would name deleted files.
	TTL duration.Duration `yaml:"ttl"`
}

// ReclaimConfig configures the reclaimer of orphan files: staged data
// files whose write died with its process, manifests and metadata files of
// commits that never landed. It runs for every catalog whose backend can
// (catalogs.Reclaimer), when the gateway starts and then periodically.
type ReclaimConfig struct {
	// Interval is the time between runs (default 1h); 0 turns the
	// reclaimer off, the start-up run included. Unset is nil.
	Interval *duration.Duration `yaml:"interval"`
	// MinAge protects young files (default 24h): only files older than
	// this may be deleted. It must exceed the longest a transaction or a
	// staged file awaiting its commit may live on any replica sharing the
	// catalogs (timeouts.txn_idle bounds an idle one, not a busy one),
	// because nothing references those files yet.
	MinAge duration.Duration `yaml:"min_age"`
}

// ClusterConfig names the gateway's other replicas.
type ClusterConfig struct {
	// Peers are the other replicas' addresses (host:port, where they
	// listen). A host name that resolves to several addresses, such as a
	// Kubernetes headless service, stands for all of them, resolved at
	// each use; listing the gateway itself is harmless. A CancelFlightInfo
	// is forwarded to them, so that a query stops whichever replica serves
	// its DoGet.
	Peers []string `yaml:"peers"`
	// PeerTimeout bounds one call to a peer (default DefaultPeerTimeout); a call that
	// times out or finds the peer unavailable is tried 3 times.
	PeerTimeout duration.Duration `yaml:"peer_timeout"`
	// Advertise is the host:port at which the other replicas reach this
	// one. When set, a transaction begun here gets an id naming it
	// (signed with tickets.signing_key, which must then be set and
	// shared), and any replica forwards the calls that name the
	// transaction here, so that clients may send each call to any
	// replica.
	Advertise string `yaml:"advertise"`
}

// HealthConfig configures the plain-HTTP health endpoints.
type HealthConfig struct {
	// Listen serves /healthz and /readyz over plain HTTP on this address
	// (e.g. :8081), for probes that cannot call the gRPC health service
	// over TLS; empty serves nothing. The gRPC health service is always
	// served on the main listener. It follows the gRPC listener's rule
	// (a non-loopback address needs auth or --insecure), and since
	// /metrics is for operators (it names every realm's catalogs), a
	// non-loopback address needs Public as well.
	Listen string `yaml:"listen"`
	// Public allows a non-loopback Listen: the operator says the address
	// is reachable by the operators' scrapers and probes only (a pod
	// network, a firewall).
	Public bool `yaml:"public"`
}

// DebugConfig holds operator diagnostics, off by default.
type DebugConfig struct {
	// PprofListen serves net/http/pprof on this loopback address
	// (e.g. 127.0.0.1:6060); empty serves nothing.
	PprofListen string `yaml:"pprof_listen"`
}

// EngineConfig configures the embedded SQL engine (DuckDB).
type EngineConfig struct {
	// MemoryLimit is DuckDB's memory_limit ("1GB", "50%"); empty keeps
	// DuckDB's default (80% of RAM).
	MemoryLimit string `yaml:"memory_limit"`
	// TempDir is where queries over the memory limit spill; it defaults
	// to <data_dir>/tmp/duckdb.
	TempDir string `yaml:"temp_dir"`
	// Threads is DuckDB's worker count; 0 uses every core.
	Threads int `yaml:"threads"`
	// MaxEndpoints is the most endpoints a query's FlightInfo is split
	// into, which clients may read in parallel (only a query that filters
	// and projects one table of several files is split); 1 never splits.
	MaxEndpoints int `yaml:"max_endpoints"`
	// SplitMinBytes is the least data (Parquet bytes planned) a query
	// must read to be split.
	SplitMinBytes int64 `yaml:"split_min_bytes"`
	// ResultCompression is the Arrow IPC body compression of query
	// results: "none" (the default: on loopback and fast links
	// compressing costs more CPU than the bytes it saves), "lz4" or
	// "zstd" for slow networks (docs/performance.md). Clients decompress
	// by themselves: the IPC format marks compressed bodies.
	ResultCompression string `yaml:"result_compression"`
}

// Defaults of the engine's query splitting.
const (
	DefaultMaxEndpoints  = 4
	DefaultSplitMinBytes = 64 << 20
)

// TicketsConfig configures query tickets.
type TicketsConfig struct {
	// SigningKey signs query tickets (HMAC-SHA256). Gateway replicas that
	// share it serve each other's tickets; empty draws a random key at
	// start.
	SigningKey string `yaml:"signing_key"`
	// TTL is how long a ticket stays valid (default 10m).
	TTL duration.Duration `yaml:"ttl"`
}

// LogConfig selects the log format and level.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// CatalogConfig declares one catalog.
type CatalogConfig struct {
	Name       string            `yaml:"name"`
	Type       string            `yaml:"type"`
	Realm      string            `yaml:"realm"`
	Properties map[string]string `yaml:"properties"`
}

// Limits bound what one request may use.
type Limits struct {
	// MaxBatchBytes is the largest message of a DoPut stream (one Arrow
	// batch) accepted.
	MaxBatchBytes int64 `yaml:"max_batch_bytes"`
	// MaxRequestBytes is the largest message of every other call (a
	// unary request such as GetFlightInfo's, a Handshake message) but a
	// DoAction body (MaxActionBytes). Each limit is checked against the
	// message's length before its body is read (server/recvlimits.go).
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// MaxConcurrentWrites bounds the DoPut streams (ingests, updates)
	// running at once; more wait for a slot.
	MaxConcurrentWrites int `yaml:"max_concurrent_writes"`
	// MaxConcurrentQueries bounds the SQL queries running at once (each
	// endpoint of a split query counts); more wait for a slot. Each holds
	// DuckDB's streaming buffer and a few result batches.
	MaxConcurrentQueries int `yaml:"max_concurrent_queries"`
	// QueryQueueWait is how long a query waits for a slot before it fails
	// with ResourceExhausted.
	QueryQueueWait duration.Duration `yaml:"query_queue_wait"`
	// QueueWait is how long a DoAction body waits for room in
	// ActionMemory before it is received, and how long a DoPut or DoGet
	// stream waits for a slot (docs/configuration.md, "Admission"), at
	// most: the client's deadline ends the wait as well.
	QueueWait duration.Duration `yaml:"queue_wait"`
	// MaxQueuedStreams bounds the DoPut streams, and the DoGet streams,
	// waiting for a slot; one more is refused ResourceExhausted.
	MaxQueuedStreams int `yaml:"max_queued_streams"`
	// MinStreamRate is the minimum progress of a DoPut or DoGet stream,
	// in bytes per second: one below it over 3s while waiting for its
	// client gives its slot up to a principal waiting with fewer
	// (server/limits.go). -1 turns that off.
	MinStreamRate int64 `yaml:"min_stream_rate"`
	// PerPrincipalWrites bounds the DoPut streams one principal (an
	// anonymous caller: one client address) runs at once; more wait for
	// a slot of its share. Default: half of MaxConcurrentWrites.
	PerPrincipalWrites int `yaml:"per_principal_writes"`
	// PerPrincipalQueries bounds the DoGet streams (query results, each
	// endpoint counting) one principal runs at once; more wait. Default:
	// half of MaxConcurrentQueries.
	PerPrincipalQueries int `yaml:"per_principal_queries"`
	// PreparedPerSession bounds the prepared statements one session (a
	// connection, or a session cookie) keeps open; they are closed when the
	// session ends.
	PreparedPerSession int `yaml:"prepared_per_session"`
	// MaxActionBytes is the largest body of a distributed-commit action
	// (PrepareCommit, CommitMessages, AbortMessages, GetCommitStatus),
	// and of any DoAction; a larger one is refused ResourceExhausted from
	// its length, before its body is received. Default: 64 MiB, or
	// max_batch_bytes when smaller.
	MaxActionBytes int64 `yaml:"max_action_bytes"`
	// ActionMemory is what the distributed-commit actions running at once
	// may hold while they decode their bodies, counted as
	// handlers.ActionDecodeFactor times each body; one that does not fit
	// is refused ResourceExhausted. At least that factor times
	// MaxActionBytes. Default: handlers.DefaultActionMemory (1 GiB), or
	// that factor times MaxActionBytes when larger.
	ActionMemory int64 `yaml:"action_memory"`
	// MemoryLimit is a soft limit on the gateway's Go heap, in bytes
	// (runtime/debug.SetMemoryLimit); 0 leaves the Go default (GOMEMLIMIT).
	MemoryLimit int64 `yaml:"memory_limit"`
	// GCPercent is the Go GC target (runtime/debug.SetGCPercent): the heap
	// may grow this many percent over the live data before a collection.
	// The gateway's live data is bounded per request (a batch, the open
	// files), so a target below Go's 100 keeps the peak close to it for a
	// little more GC work. A GOGC environment variable wins.
	GCPercent int `yaml:"gc_percent"`
	// GCMinHeap is the heap, in bytes, below which the GC does not
	// collect however small the live data (server/gcfloor.go): past it
	// GCPercent applies. Default DefaultGCMinHeap; -1 turns the floor off,
	// and so does a GOGC environment variable.
	GCMinHeap int64 `yaml:"gc_min_heap"`
}

// Timeouts of the gateway.
type Timeouts struct {
	// TxnIdle rolls back a transaction untouched for this long.
	TxnIdle duration.Duration `yaml:"txn_idle"`
	// TxnOrphanGrace rolls back a transaction this long after the client
	// connection it is bound to closed, unless it is used by id meanwhile.
	TxnOrphanGrace duration.Duration `yaml:"txn_orphan_grace"`
	// ShutdownGrace is how long in-flight calls may run after SIGTERM.
	ShutdownGrace duration.Duration `yaml:"shutdown_grace"`
	// Statement stops a SQL query (and an INSERT's source query) running
	// longer, with DeadlineExceeded; zero, the default, for none. A
	// client's own gRPC deadline applies as well.
	Statement duration.Duration `yaml:"statement"`
	// StreamIdle cuts a DoPut that receives no message, or a DoGet whose
	// client accepts no message, for this long (DeadlineExceeded), and
	// frees what it held: its slot, its staged files.
	StreamIdle duration.Duration `yaml:"stream_idle"`
}

var envRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// Override changes a loaded configuration before defaults and validation:
// command-line flags use it, so that they win over the environment.
type Override func(*Config)

// LoadConfig reads a YAML file (path may be empty for none), applies
// environment overrides, then the given overrides, then defaults, and
// validates. Errors name the key at fault.
func LoadConfig(path string, overrides ...Override) (*Config, error) {
	cfg := &Config{}
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		// ${VAR} in the file is replaced from the environment, so secrets
		// need not be written into it. Only the braced form: bcrypt hashes
		// are full of bare '$'.
		expanded := envRef.ReplaceAllStringFunc(string(raw), func(m string) string {
			return os.Getenv(m[2 : len(m)-1])
		})
		dec := yaml.NewDecoder(bytes.NewReader([]byte(expanded)), yaml.Strict())
		if err := dec.Decode(cfg); err != nil {
			return nil, yamlError(path, expanded, err)
		}
	}
	if err := cfg.applyEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	for _, o := range overrides {
		o(cfg)
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// envVar is one environment variable that overrides a key of the file:
// its name and how it sets the config. envVars is the one table both
// applyEnv and EnvVars (flightgw serve --help) read, so that the two
// cannot drift.
type envVar struct {
	name string
	set  func(c *Config, name, v string) error
}

// envVars are the environment overrides, in the order --help lists them.
var envVars = []envVar{
	envString("FLIGHTGW_LISTEN", func(c *Config) *string { return &c.Listen }),
	envString("FLIGHTGW_DATA_DIR", func(c *Config) *string { return &c.DataDir }),
	envBool("FLIGHTGW_INSECURE", func(c *Config) *bool { return &c.Insecure }),
	envString("FLIGHTGW_LOG_LEVEL", func(c *Config) *string { return &c.Log.Level }),
	envString("FLIGHTGW_LOG_FORMAT", func(c *Config) *string { return &c.Log.Format }),
	envString("FLIGHTGW_DEFAULT_CATALOG", func(c *Config) *string { return &c.DefaultCatalog }),
	envString("FLIGHTGW_DEFAULT_SCHEMA", func(c *Config) *string { return &c.DefaultSchema }),
	envInt64("FLIGHTGW_MAX_BATCH_BYTES", func(c *Config) *int64 { return &c.Limits.MaxBatchBytes }),
	envInt64("FLIGHTGW_MEMORY_LIMIT", func(c *Config) *int64 { return &c.Limits.MemoryLimit }),
	envDuration("FLIGHTGW_TXN_IDLE_TIMEOUT", func(c *Config) *duration.Duration { return &c.Timeouts.TxnIdle }),
	envDuration("FLIGHTGW_SHUTDOWN_GRACE", func(c *Config) *duration.Duration { return &c.Timeouts.ShutdownGrace }),
	envDuration("FLIGHTGW_STATEMENT_TIMEOUT", func(c *Config) *duration.Duration { return &c.Timeouts.Statement }),
	envString("FLIGHTGW_AUTH_SIGNING_KEY", func(c *Config) *string { return &c.Auth.SigningKey }),
	envString("FLIGHTGW_ENGINE_MEMORY_LIMIT", func(c *Config) *string { return &c.Engine.MemoryLimit }),
	envString("FLIGHTGW_ENGINE_TEMP_DIR", func(c *Config) *string { return &c.Engine.TempDir }),
	envString("FLIGHTGW_RESULT_COMPRESSION", func(c *Config) *string { return &c.Engine.ResultCompression }),
	envString("FLIGHTGW_TICKETS_SIGNING_KEY", func(c *Config) *string { return &c.Tickets.SigningKey }),
	envString("FLIGHTGW_PPROF_LISTEN", func(c *Config) *string { return &c.Debug.PprofListen }),
	envInt("FLIGHTGW_GC_PERCENT", func(c *Config) *int { return &c.Limits.GCPercent }),
	envInt64("FLIGHTGW_GC_MIN_HEAP", func(c *Config) *int64 { return &c.Limits.GCMinHeap }),
	{"FLIGHTGW_CLUSTER_PEERS", func(c *Config, _, v string) error { c.Cluster.Peers = peerList(v); return nil }},
	envString("FLIGHTGW_TLS_CERT_FILE", func(c *Config) *string { return &c.TLS.CertFile }),
	envString("FLIGHTGW_TLS_KEY_FILE", func(c *Config) *string { return &c.TLS.KeyFile }),
	envString("FLIGHTGW_TLS_CLIENT_CA_FILE", func(c *Config) *string { return &c.TLS.ClientCAFile }),
	envString("FLIGHTGW_CLUSTER_ADVERTISE", func(c *Config) *string { return &c.Cluster.Advertise }),
	envString("FLIGHTGW_HEALTH_LISTEN", func(c *Config) *string { return &c.Health.Listen }),
	{"FLIGHTGW_RECLAIM_INTERVAL", func(c *Config, name, v string) error {
		c.Reclaim.Interval = &duration.Duration{}
		_ = c.Reclaim.Interval.UnmarshalText([]byte(v))
		return c.Reclaim.Interval.Check(name)
	}},
	envDuration("FLIGHTGW_RECLAIM_MIN_AGE", func(c *Config) *duration.Duration { return &c.Reclaim.MinAge }),
	envDuration("FLIGHTGW_STREAM_IDLE_TIMEOUT", func(c *Config) *duration.Duration { return &c.Timeouts.StreamIdle }),
	envInt("FLIGHTGW_PER_PRINCIPAL_WRITES", func(c *Config) *int { return &c.Limits.PerPrincipalWrites }),
	envInt("FLIGHTGW_PER_PRINCIPAL_QUERIES", func(c *Config) *int { return &c.Limits.PerPrincipalQueries }),
	envInt("FLIGHTGW_PREPARED_PER_SESSION", func(c *Config) *int { return &c.Limits.PreparedPerSession }),
	envInt64("FLIGHTGW_MAX_ACTION_BYTES", func(c *Config) *int64 { return &c.Limits.MaxActionBytes }),
	envInt64("FLIGHTGW_ACTION_MEMORY", func(c *Config) *int64 { return &c.Limits.ActionMemory }),
	envInt64("FLIGHTGW_MAX_REQUEST_BYTES", func(c *Config) *int64 { return &c.Limits.MaxRequestBytes }),
	envBool("FLIGHTGW_HEALTH_PUBLIC", func(c *Config) *bool { return &c.Health.Public }),
	envDuration("FLIGHTGW_COMMIT_MESSAGES_TTL", func(c *Config) *duration.Duration { return &c.CommitMessages.TTL }),
	envDuration("FLIGHTGW_MAINTENANCE_INTERVAL", func(c *Config) *duration.Duration { return &c.Maintenance.Interval }),
	envInt("FLIGHTGW_MAINTENANCE_AFTER_COMMITS", func(c *Config) *int { return &c.Maintenance.AfterCommits }),
}

// EnvVars lists the environment variables that override the file (what
// flightgw serve --help names).
var EnvVars = func() []string {
	out := make([]string, len(envVars))
	for i, e := range envVars {
		out[i] = e.name
	}
	return out
}()

func envString(name string, field func(*Config) *string) envVar {
	return envVar{name, func(c *Config, _, v string) error { *field(c) = v; return nil }}
}

func envBool(name string, field func(*Config) *bool) envVar {
	return envVar{name, func(c *Config, name, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not a boolean", name, v)
		}
		*field(c) = b
		return nil
	}}
}

func envInt64(name string, field func(*Config) *int64) envVar {
	return envVar{name, func(c *Config, name, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not an integer", name, v)
		}
		*field(c) = n
		return nil
	}}
}

func envInt(name string, field func(*Config) *int) envVar {
	return envVar{name, func(c *Config, name, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not an integer", name, v)
		}
		*field(c) = n
		return nil
	}}
}

func envDuration(name string, field func(*Config) *duration.Duration) envVar {
	return envVar{name, func(c *Config, name, v string) error {
		p := field(c)
		_ = p.UnmarshalText([]byte(v))
		return p.Check(name)
	}}
}

// applyEnv applies every variable of envVars that lookup finds.
func (c *Config) applyEnv(lookup func(string) (string, bool)) error {
	for _, e := range envVars {
		if v, ok := lookup(e.name); ok {
			if err := e.set(c, e.name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
	if len(c.Catalogs) == 0 {
		c.Catalogs = []CatalogConfig{EmbeddedCatalog(c.DataDir)}
	}
	if c.DefaultCatalog == "" {
		c.DefaultCatalog = c.Catalogs[0].Name
	}
	if c.DefaultSchema == "" {
		c.DefaultSchema = DefaultSchema
	}
	if c.Limits.MaxBatchBytes == 0 {
		c.Limits.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.Limits.MaxRequestBytes == 0 {
		c.Limits.MaxRequestBytes = min(DefaultMaxRequestBytes, c.Limits.MaxBatchBytes)
	}
	if c.Limits.MaxActionBytes == 0 {
		c.Limits.MaxActionBytes = min(handlers.DefaultMaxActionBytes, c.Limits.MaxBatchBytes)
	}
	if c.Limits.ActionMemory == 0 {
		c.Limits.ActionMemory = max(handlers.DefaultActionMemory, handlers.ActionDecodeFactor*c.Limits.MaxActionBytes)
	}
	if c.Limits.GCPercent == 0 {
		c.Limits.GCPercent = DefaultGCPercent
	}
	if c.Limits.GCMinHeap == 0 {
		c.Limits.GCMinHeap = DefaultGCMinHeap
	}
	if c.Limits.MaxConcurrentWrites == 0 {
		c.Limits.MaxConcurrentWrites = DefaultMaxConcurrentWrites
	}
	if c.Limits.MaxConcurrentQueries == 0 {
		c.Limits.MaxConcurrentQueries = DefaultMaxConcurrentQueries
	}
	if c.Limits.PerPrincipalWrites == 0 {
		c.Limits.PerPrincipalWrites = max(1, c.Limits.MaxConcurrentWrites/2)
	}
	if c.Limits.PerPrincipalQueries == 0 {
		c.Limits.PerPrincipalQueries = max(1, c.Limits.MaxConcurrentQueries/2)
	}
	if c.Limits.PreparedPerSession == 0 {
		c.Limits.PreparedPerSession = DefaultPreparedPerSession
	}
	if c.Limits.MaxQueuedStreams == 0 {
		c.Limits.MaxQueuedStreams = DefaultMaxQueuedStreams
	}
	if c.Limits.MinStreamRate == 0 {
		c.Limits.MinStreamRate = DefaultMinStreamRate
	}
	if c.Limits.QueueWait == (duration.Duration{}) {
		c.Limits.QueueWait = duration.Of(DefaultQueueWait)
	}
	if c.Limits.QueryQueueWait == (duration.Duration{}) {
		c.Limits.QueryQueueWait = duration.Of(DefaultQueryQueueWait)
	}
	if c.Engine.MaxEndpoints == 0 {
		c.Engine.MaxEndpoints = DefaultMaxEndpoints
	}
	if c.Engine.SplitMinBytes == 0 {
		c.Engine.SplitMinBytes = DefaultSplitMinBytes
	}
	if c.Engine.TempDir == "" {
		c.Engine.TempDir = filepath.Join(c.DataDir, "tmp", "duckdb")
	}
	if c.Timeouts.TxnIdle == (duration.Duration{}) {
		c.Timeouts.TxnIdle = duration.Of(DefaultTxnIdleTimeout)
	}
	if c.Timeouts.ShutdownGrace == (duration.Duration{}) {
		c.Timeouts.ShutdownGrace = duration.Of(DefaultShutdownGrace)
	}
	if c.Reclaim.Interval == nil {
		iv := duration.Of(DefaultReclaimInterval)
		c.Reclaim.Interval = &iv
	}
	if c.Reclaim.MinAge == (duration.Duration{}) {
		c.Reclaim.MinAge = duration.Of(DefaultReclaimMinAge)
	}
	if c.CommitMessages.TTL == (duration.Duration{}) {
		c.CommitMessages.TTL = duration.Of(c.Reclaim.MinAge.Duration / 2)
	}
	if c.Timeouts.StreamIdle == (duration.Duration{}) {
		c.Timeouts.StreamIdle = duration.Of(DefaultStreamIdle)
	}
	for i := range c.Catalogs {
		if c.Catalogs[i].Realm == "" {
			c.Catalogs[i].Realm = auth.DefaultRealm
		}
	}
}

// EmbeddedCatalog is the default catalog: an Iceberg SQL catalog on SQLite
// in dataDir/catalog.db with its warehouse in dataDir/warehouse and the
// namespace "default".
func EmbeddedCatalog(dataDir string) CatalogConfig {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	return CatalogConfig{
		Name: DefaultCatalogName,
		Type: "iceberg",
		Properties: map[string]string{
			"catalog-type":      "sql",
			"uri":               "sqlite://" + filepath.Join(abs, "catalog.db"),
			"warehouse":         "file://" + filepath.Join(abs, "warehouse"),
			"create-namespaces": DefaultSchema,
		},
	}
}

// Validate checks the configuration and names the key at fault.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := splitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %w", err))
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level: %q is not one of debug, info, warn, error", c.Log.Level))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log.format: %q is not text or json", c.Log.Format))
	}
	names := map[string]bool{}
	for i, cat := range c.Catalogs {
		switch {
		case cat.Name == "":
			errs = append(errs, fmt.Errorf("catalogs[%d].name: empty", i))
		case names[cat.Name]:
			errs = append(errs, fmt.Errorf("catalogs[%d].name: duplicate catalog %q", i, cat.Name))
		default:
			// Catalog names reach table identifiers and storage paths:
			// they obey the rules of client names.
			if err := catalogs.ValidateName("catalog", cat.Name); err != nil {
				errs = append(errs, fmt.Errorf("catalogs[%d].name: %w", i, err))
			}
		}
		names[cat.Name] = true
		if cat.Type == "" {
			errs = append(errs, fmt.Errorf("catalogs[%d].type: empty", i))
		}
	}
	if err := catalogs.ValidateNamespace(strings.Split(c.DefaultSchema, ".")); err != nil {
		errs = append(errs, fmt.Errorf("default_schema: %w", err))
	}
	if !names[c.DefaultCatalog] {
		errs = append(errs, fmt.Errorf("default_catalog: %q is not a configured catalog", c.DefaultCatalog))
	}
	if c.Limits.MaxBatchBytes < 1<<20 || c.Limits.MaxBatchBytes > 2<<30-1 {
		errs = append(errs, fmt.Errorf("limits.max_batch_bytes: %d is outside 1 MiB .. 2 GiB", c.Limits.MaxBatchBytes))
	}
	if n := c.Limits.MaxRequestBytes; n < 64<<10 || n > c.Limits.MaxBatchBytes {
		errs = append(errs, fmt.Errorf("limits.max_request_bytes: %d is outside 64 KiB .. limits.max_batch_bytes (%d)", n, c.Limits.MaxBatchBytes))
	}
	if n := c.Limits.MaxActionBytes; n < 1<<10 || n > c.Limits.MaxBatchBytes {
		errs = append(errs, fmt.Errorf("limits.max_action_bytes: %d is outside 1 KiB .. limits.max_batch_bytes (%d)", n, c.Limits.MaxBatchBytes))
	}
	if n, least := c.Limits.ActionMemory, handlers.ActionDecodeFactor*c.Limits.MaxActionBytes; n < least {
		errs = append(errs, fmt.Errorf("limits.action_memory: %d is below %d times limits.max_action_bytes (%d): an action of the largest body could never run",
			n, handlers.ActionDecodeFactor, least))
	}
	if c.Limits.MaxConcurrentWrites < 1 {
		errs = append(errs, fmt.Errorf("limits.max_concurrent_writes: %d is below 1", c.Limits.MaxConcurrentWrites))
	}
	if c.Limits.MaxConcurrentQueries < 1 {
		errs = append(errs, fmt.Errorf("limits.max_concurrent_queries: %d is below 1", c.Limits.MaxConcurrentQueries))
	}
	if n := c.Limits.PerPrincipalWrites; n < 1 || n > c.Limits.MaxConcurrentWrites {
		errs = append(errs, fmt.Errorf("limits.per_principal_writes: %d is outside 1 .. limits.max_concurrent_writes (%d)", n, c.Limits.MaxConcurrentWrites))
	}
	if n := c.Limits.PerPrincipalQueries; n < 1 || n > c.Limits.MaxConcurrentQueries {
		errs = append(errs, fmt.Errorf("limits.per_principal_queries: %d is outside 1 .. limits.max_concurrent_queries (%d)", n, c.Limits.MaxConcurrentQueries))
	}
	if n := c.Limits.PreparedPerSession; n < 1 || n > handlers.MaxPreparedStatements {
		errs = append(errs, fmt.Errorf("limits.prepared_per_session: %d is outside 1 .. %d", n, handlers.MaxPreparedStatements))
	}
	if c.Limits.MaxQueuedStreams < 1 {
		errs = append(errs, fmt.Errorf("limits.max_queued_streams: %d is below 1", c.Limits.MaxQueuedStreams))
	}
	if c.Limits.MinStreamRate < -1 {
		errs = append(errs, fmt.Errorf("limits.min_stream_rate: %d is below -1 (off)", c.Limits.MinStreamRate))
	}
	if err := c.Limits.QueueWait.Check("limits.queue_wait"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Limits.QueryQueueWait.Check("limits.query_queue_wait"); err != nil {
		errs = append(errs, err)
	}
	if c.Limits.GCPercent < 10 || c.Limits.GCPercent > 1000 {
		errs = append(errs, fmt.Errorf("limits.gc_percent: %d is outside 10 .. 1000", c.Limits.GCPercent))
	}
	if c.Limits.GCMinHeap < -1 {
		errs = append(errs, fmt.Errorf("limits.gc_min_heap: %d is below -1 (off)", c.Limits.GCMinHeap))
	}
	if c.Limits.MemoryLimit < 0 {
		errs = append(errs, fmt.Errorf("limits.memory_limit: negative"))
	}
	if err := c.Timeouts.TxnIdle.Check("timeouts.txn_idle"); err != nil {
		errs = append(errs, err)
	} else if c.Timeouts.TxnIdle.Duration < time.Second {
		errs = append(errs, fmt.Errorf("timeouts.txn_idle: %v is below 1s", c.Timeouts.TxnIdle))
	}
	if err := c.Timeouts.TxnOrphanGrace.Check("timeouts.txn_orphan_grace"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Timeouts.ShutdownGrace.Check("timeouts.shutdown_grace"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Timeouts.Statement.Check("timeouts.statement"); err != nil {
		errs = append(errs, err)
	}
	if c.Reclaim.Interval != nil {
		if err := c.Reclaim.Interval.Check("reclaim.interval"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.Reclaim.MinAge.Check("reclaim.min_age"); err != nil {
		errs = append(errs, err)
	}
	if err := c.CommitMessages.TTL.Check("commit_messages.ttl"); err != nil {
		errs = append(errs, err)
	} else if c.CommitMessages.TTL.Duration <= 0 {
		errs = append(errs, errors.New("commit_messages.ttl: must be above 0"))
	} else if reclaims := c.Reclaim.Interval == nil || c.Reclaim.Interval.Duration > 0; reclaims && c.CommitMessages.TTL.Duration >= c.Reclaim.MinAge.Duration {
		errs = append(errs, fmt.Errorf("commit_messages.ttl: %v is not below reclaim.min_age (%v): the reclaimer could delete the files of a payload that can still be committed",
			c.CommitMessages.TTL, c.Reclaim.MinAge))
	}
	errs = append(errs, c.Maintenance.check()...)
	if err := c.Timeouts.StreamIdle.Check("timeouts.stream_idle"); err != nil {
		errs = append(errs, err)
	} else if c.Timeouts.StreamIdle.Duration < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("timeouts.stream_idle: %v is below 100ms", c.Timeouts.StreamIdle))
	}
	if _, ok := resultCompressions[c.Engine.ResultCompression]; !ok {
		errs = append(errs, fmt.Errorf("engine.result_compression: %q is not one of none, lz4, zstd", c.Engine.ResultCompression))
	}
	if c.Engine.MaxEndpoints < 1 || c.Engine.MaxEndpoints > 64 {
		errs = append(errs, fmt.Errorf("engine.max_endpoints: %d is outside 1 .. 64", c.Engine.MaxEndpoints))
	}
	if c.Engine.SplitMinBytes < 0 {
		errs = append(errs, fmt.Errorf("engine.split_min_bytes: negative"))
	}
	for i, peer := range c.Cluster.Peers {
		if _, port, err := net.SplitHostPort(peer); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("cluster.peers[%d]: %q is not host:port", i, peer))
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			errs = append(errs, fmt.Errorf("cluster.peers[%d]: %q has no valid port", i, peer))
		}
	}
	if err := c.Cluster.PeerTimeout.Check("cluster.peer_timeout"); err != nil {
		errs = append(errs, err)
	}
	if a := c.Cluster.Advertise; a != "" {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" || port == "0" {
			errs = append(errs, fmt.Errorf("cluster.advertise: %q is not host:port (the address the other replicas reach this one at)", a))
		}
		if c.Tickets.SigningKey == "" {
			errs = append(errs, errors.New("cluster.advertise: needs tickets.signing_key, shared by the replicas (transaction ids are signed with it)"))
		}
	}
	errs = append(errs, c.TLS.validate()...)
	if c.Health.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Health.Listen); err != nil {
			errs = append(errs, fmt.Errorf("health.listen: %q is not host:port", c.Health.Listen))
		}
	}
	if c.Debug.PprofListen != "" {
		if err := checkExposure(c.Debug.PprofListen, false, false); err != nil {
			errs = append(errs, fmt.Errorf("debug.pprof_listen: must be a loopback address, got %q", c.Debug.PprofListen))
		}
	}
	if err := c.Auth.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
