package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/engine"
	"github.com/flightgw/flightgw/txn"
)

// Catalog is one configured catalog as the handlers see it.
type Catalog struct {
	Name     string
	Type     string
	Realm    string
	Provider catalogs.Provider
}

// Options configure a Handler.
type Options struct {
	Catalogs []Catalog
	Txns     *txn.Manager
	// DefaultCatalog and DefaultSchema fill in a request that leaves them
	// out.
	DefaultCatalog string
	DefaultSchema  string
	// MaxBatchBytes is the largest Arrow message accepted (advertised in
	// GetSqlInfo as well).
	MaxBatchBytes int64
	// ServerName and Version are reported in GetSqlInfo.
	ServerName string
	Version    string
	Log        *slog.Logger
	Alloc      memory.Allocator
	// Engine runs SQL queries and INSERT; nil answers them Unimplemented.
	Engine *engine.Engine
	// TicketKey signs query tickets (HMAC-SHA256); replicas sharing it
	// can serve each other's tickets. Empty draws a random key per process.
	TicketKey []byte
	// TicketTTL is how long a query ticket is valid (DefaultTicketTTL
	// when zero).
	TicketTTL time.Duration
	// CommitMessageTTL is how long a PrepareCommit payload can be
	// committed (txn.DefaultMessageTTL when zero, defined there once);
	// keep it below reclaim.min_age.
	CommitMessageTTL time.Duration
	// AfterCommitMessages is test-only: when not nil it is called after a
	// CommitMessages landed and before its reply is sent, so that a test
	// can kill the coordinator at the one point where only the commit id
	// tells the client what happened (server sets it from
	// FLIGHTGW_TEST_CRASH_AFTER_COMMIT). Nil in every real deployment.
	AfterCommitMessages func()
	// StatementTimeout stops a query (or an INSERT's source query) that
	// runs longer; zero for none. Reported in GetSqlInfo.
	StatementTimeout time.Duration
	// TxnTimeout is reported in GetSqlInfo as the transaction timeout:
	// the idle time after which a transaction is rolled back.
	TxnTimeout time.Duration
	// MaxEndpoints is the most endpoints a query's FlightInfo is split
	// into (engine.Split); below 2 every query has one endpoint.
	MaxEndpoints int
	// SplitMinBytes is the least data a query must read to be split.
	SplitMinBytes int64
	// MaxConcurrentQueries bounds the SQL queries (each endpoint of a
	// split query counts) running at once; more wait for a slot while
	// their caller waits, at most QueryQueueWait. 0 for no bound.
	MaxConcurrentQueries int
	// QueryQueueWait is how long a query waits for a slot before it fails
	// ResourceExhausted (DefaultQueryQueueWait when zero).
	QueryQueueWait time.Duration
	// PreparedPerSession bounds the prepared statements one session keeps
	// open here (0: only MaxPreparedStatements bounds them).
	PreparedPerSession int
	// Peers are the gateway's other replicas; nil for none.
	Peers Peers
	// Advertise is the address at which the other replicas reach this
	// one (cluster.advertise). When set, the transactions begun here have
	// ids naming it (signed with TicketKey), and Route sends the calls
	// that name them here from any replica.
	Advertise string
	// MaxActionBytes is the largest body of a distributed-commit action
	// (limits.max_action_bytes; DefaultMaxActionBytes when zero).
	MaxActionBytes int64
	// ActionMemory is what the distributed-commit actions running at once
	// may hold while they decode their bodies (limits.action_memory;
	// DefaultActionMemory when zero): one that does not fit is refused
	// ResourceExhausted.
	ActionMemory int64
}

// Peers reaches the gateway's other replicas.
type Peers interface {
	// Cancel forwards a CancelFlightInfo, already applied here, to every
	// other replica, as the caller and marked with ForwardedHeader; it
	// fails naming the replicas it could not reach.
	Cancel(ctx context.Context, req *flight.CancelFlightInfoRequest) error
}

// ForwardedHeader marks a call one replica forwards to another, which
// applies it without forwarding it again.
const ForwardedHeader = "x-flightgw-forwarded"

// DefaultQueryQueueWait is how long a query waits for a slot when Options
// leave QueryQueueWait unset.
const DefaultQueryQueueWait = 30 * time.Second

// DefaultSchema is the schema a table name without one resolves in
// (Options.DefaultSchema when empty): the embedded catalog's namespace,
// the `default` of Spark and the table formats.
const DefaultSchema = "default"

// IdempotencyKeyOption is the CommandStatementIngest option whose value
// makes an ingest exactly-once: a retried ingest whose key already landed
// returns the original row count and writes nothing.
const IdempotencyKeyOption = "flightgw.idempotency_key"

// IdempotencyKeyHeader carries the same key as a gRPC call header, for
// clients that cannot set ingest options (the ADBC drivers).
const IdempotencyKeyHeader = "x-flightgw-idempotency-key"

// Handler implements flightsql.Server.
type Handler struct {
	flightsql.BaseServer
	opts     Options
	catalogs map[string]Catalog
	log      *slog.Logger
	sql      sqlState
	// querySlots bounds the running queries (nil: no bound).
	querySlots chan struct{}
	// running and waiting count the queries holding and waiting for a
	// slot, for metrics (QuerySlots).
	running, waiting atomic.Int64
	// msgs is the commit messages' write policy (actions.go).
	msgOnce sync.Once
	msgs    *txn.Messages
	// actionMem is the memory the running actions hold (action_budget.go).
	actionMem actionBudget
}

// New builds a Handler.
func New(opts Options) (*Handler, error) {
	if opts.Txns == nil {
		return nil, fmt.Errorf("handlers: a transaction manager is required")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Alloc == nil {
		opts.Alloc = memory.DefaultAllocator
	}
	if opts.DefaultSchema == "" {
		opts.DefaultSchema = DefaultSchema
	}
	h := &Handler{opts: opts, catalogs: map[string]Catalog{}, log: opts.Log}
	if opts.MaxConcurrentQueries > 0 {
		h.querySlots = make(chan struct{}, opts.MaxConcurrentQueries)
	}
	h.Alloc = opts.Alloc
	for _, c := range opts.Catalogs {
		if _, dup := h.catalogs[c.Name]; dup {
			return nil, fmt.Errorf("handlers: catalog %q configured twice", c.Name)
		}
		if c.Realm == "" {
			c.Realm = auth.DefaultRealm
		}
		h.catalogs[c.Name] = c
	}
	if err := h.registerSQLInfo(); err != nil {
		return nil, err
	}
	return h, nil
}

// principal returns the caller; the auth interceptors always set one.
func principal(ctx context.Context) (auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return auth.Principal{}, status.Error(codes.Unauthenticated, "no authenticated principal")
	}
	return p, nil
}

// catalog resolves a catalog name for the caller, ignoring case when
// no catalog has it in its exact case (resolve.go). A catalog of another
// realm does not exist for it.
func (h *Handler) catalog(ctx context.Context, name string) (Catalog, auth.Principal, error) {
	p, err := principal(ctx)
	if err != nil {
		return Catalog{}, p, err
	}
	if name == "" {
		name = h.opts.DefaultCatalog
	}
	c, ok, err := h.findCatalog(p, name)
	if err != nil {
		return Catalog{}, p, Status(err)
	}
	if !ok {
		return Catalog{}, p, status.Errorf(codes.NotFound, "catalog %q not found", name)
	}
	return c, p, nil
}

// visibleCatalogs lists the caller's catalogs, sorted by name.
func (h *Handler) visibleCatalogs(ctx context.Context) ([]Catalog, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var out []Catalog
	for _, c := range h.catalogs {
		if c.Realm == p.Realm {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Catalog) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// tableIdent builds a TableIdent from Flight SQL's catalog, schema and
// table, filling the defaults. A schema "a.b" is the namespace [a b].
func (h *Handler) tableIdent(catalog, schema, table string) catalogs.TableIdent {
	if schema == "" {
		schema = h.opts.DefaultSchema
	}
	return catalogs.TableIdent{Catalog: catalog, Namespace: strings.Split(schema, "."), Name: table}
}
