package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/engine"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/flightframe"
	"github.com/flightgw/flightgw/internal/version"
	"github.com/flightgw/flightgw/txn"
)

// Server is an assembled gateway.
type Server struct {
	calls    calls // in flight, for the shutdown to name (inflight.go)
	cfg      *Config
	log      *slog.Logger
	grpc     *grpc.Server
	health   *health.Server
	txns     *txn.Manager
	catalogs []handlers.Catalog
	auth     *auth.Authenticator
	engine   *engine.Engine
	peers    *peers // nil without cluster.peers and cluster.advertise
	reclaim  *reclaimLoop
	maintain *maintainLoop
	gcStop   func()   // stops the GC floor (gcfloor.go); nil before Serve
	idle     idleHeap // returns the idle Go heap before a stream (idleheap.go)
	metrics  *metrics
}

// writeBufferSize is gRPC's write buffer per connection (its default is 32
// KiB). Paired against the default on a 10M-row stream read by Python
// ADBC, 256 KiB and 1 MiB both cut the client's CPU by 13-20% and the
// server's by 2-3%.
const writeBufferSize = 256 << 10

// New opens the configured catalogs and builds the gRPC server. It does
// not listen yet.
func New(ctx context.Context, cfg *Config, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Limits.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.Limits.MemoryLimit)
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(cfg.Limits.GCPercent)
	}
	authn, err := auth.New(cfg.Auth)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, auth: authn}
	for _, cc := range cfg.Catalogs {
		p, err := catalogs.Open(ctx, cc.Type, cc.Name, cc.Properties)
		if err != nil {
			s.closeCatalogs()
			return nil, err
		}
		s.catalogs = append(s.catalogs, handlers.Catalog{Name: cc.Name, Type: cc.Type, Realm: cc.Realm, Provider: p})
		log.Info("catalog opened", "catalog", cc.Name, "type", cc.Type, "realm", cc.Realm)
	}
	s.metrics = newMetrics(s.catalogs)
	// The maintenance loop observes the commits (maintenance.after_commits)
	// and hands every observation on to the metrics.
	s.maintain = newMaintainLoop(cfg.Maintenance, cfg.CommitMessages.TTL.Duration, s.metrics, s.catalogs, log)
	s.txns = txn.NewManager(cfg.Timeouts.TxnIdle.Duration, log, txn.WithOrphanGrace(cfg.Timeouts.TxnOrphanGrace.Duration),
		txn.WithObserver(s.maintain))
	s.reclaim = newReclaimLoop(cfg.Reclaim, cfg.Timeouts.TxnIdle.Duration, s.catalogs, log)
	// The files the open transactions staged are kept whatever their age.
	s.reclaim.opts.Held = s.txns.Held
	s.engine, err = openEngine(cfg, log)
	if err != nil {
		s.txns.Close()
		s.closeCatalogs()
		return nil, err
	}
	var certs *certReloader
	var creds []grpc.ServerOption
	peerCreds := insecure.NewCredentials()
	if cfg.TLS.Enabled() {
		if certs, err = newCertReloader(cfg.TLS.CertFile, cfg.TLS.KeyFile, log); err != nil {
			s.txns.Close()
			s.closeCatalogs()
			return nil, err
		}
		conf, err := serverTLS(cfg.TLS, certs)
		if err == nil {
			creds = append(creds, grpc.Creds(credentials.NewTLS(conf)))
			conf, err = peerTLS(cfg.TLS, certs)
			peerCreds = credentials.NewTLS(conf)
		}
		if err != nil {
			s.txns.Close()
			s.closeCatalogs()
			return nil, err
		}
	}
	var cancelPeers handlers.Peers
	if len(cfg.Cluster.Peers) > 0 || cfg.Cluster.Advertise != "" {
		s.peers = newPeers(cfg.Cluster.Peers, cfg.Cluster.PeerTimeout.Duration, peerCreds, int(cfg.Limits.MaxBatchBytes), log)
		if len(cfg.Cluster.Peers) > 0 {
			cancelPeers = s.peers
		}
	}
	h, err := handlers.New(handlers.Options{
		Engine:               s.engine,
		TicketKey:            []byte(cfg.Tickets.SigningKey),
		TicketTTL:            cfg.Tickets.TTL.Duration,
		CommitMessageTTL:     cfg.CommitMessages.TTL.Duration,
		StatementTimeout:     cfg.Timeouts.Statement.Duration,
		TxnTimeout:           cfg.Timeouts.TxnIdle.Duration,
		MaxEndpoints:         cfg.Engine.MaxEndpoints,
		SplitMinBytes:        cfg.Engine.SplitMinBytes,
		MaxConcurrentQueries: cfg.Limits.MaxConcurrentQueries,
		QueryQueueWait:       cfg.Limits.QueryQueueWait.Duration,
		PreparedPerSession:   cfg.Limits.PreparedPerSession,
		Peers:                cancelPeers,
		Advertise:            cfg.Cluster.Advertise,
		Catalogs:             s.catalogs,
		Txns:                 s.txns,
		DefaultCatalog:       cfg.DefaultCatalog,
		DefaultSchema:        cfg.DefaultSchema,
		MaxBatchBytes:        cfg.Limits.MaxBatchBytes,
		MaxActionBytes:       cfg.Limits.MaxActionBytes,
		ActionMemory:         cfg.Limits.ActionMemory,
		Version:              version.Version,
		Log:                  log,
		AfterCommitMessages:  crashAfterCommit(log),
	})
	if err != nil {
		s.txns.Close()
		s.closeCatalogs()
		return nil, err
	}
	g := gauges{openTxns: s.txns.OpenCount, querySlots: h.QuerySlots, catalogs: s.catalogs}
	if s.engine != nil {
		g.engineMem = s.engine.MemoryUsage
	}
	s.metrics.watch(g)
	maxMsg := int(cfg.Limits.MaxBatchBytes)
	rt := router{h: h, peers: s.peers, log: log}
	bad := &badMessages{}
	s.grpc = grpc.NewServer(append(creds,
		grpc.StatsHandler(connWatcher{ended: []func(string){s.txns.SessionEnded, h.SessionEnded}}),
		// Credentials are checked when a call's headers arrive, before
		// its request is read (auth/tap.go); DoPut and DoAction raise
		// their streams' receive limit over this one (recvlimits.go).
		grpc.InTapHandle(observeTap(authn.Tap, s.metrics, log)),
		grpc.MaxRecvMsgSize(int(cfg.Limits.MaxRequestBytes)),
		grpc.MaxSendMsgSize(maxMsg),
		// Clients and peer replicas may ping a connection with a call open
		// every 10s (peers ping every 30s) to notice a dead one.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second}),
		// Query results leave in socket writes of up to 256 KiB, not
		// gRPC's 32 KiB: fewer syscalls here, and fewer, fuller reads for
		// the client (docs/performance.md).
		grpc.WriteBufferSize(writeBufferSize),
		// Received frames are read into buffers that are written over
		// before they are read: gRPC's default pool clears each again
		// (2.5% of an ingest's CPU), this one does not.
		experimental.BufferPool(&flightframe.DirtyPool{}),
		grpc.ForceServerCodecV2(newFrameCodec(bad)),
		grpc.ChainUnaryInterceptor(s.metrics.unary(), recoverUnary(log), logUnary(log, &s.calls), clientGoneUnary(), rejectMalformed(bad), authn.UnaryInterceptor(), rt.unary()),
		grpc.ChainStreamInterceptor(recvLimits(maxMsg, int(cfg.Limits.MaxActionBytes)), s.metrics.stream(), recoverStream(log), logStream(log, &s.calls), clientGoneStream(), guardStreams(cfg.Timeouts.StreamIdle.Duration, bad),
			authn.StreamInterceptor(), reserveActionBodies(h, cfg.Limits.QueueWait.Duration), rt.stream(),
			newAdmission("DoPut", admissionLimits{capacity: cfg.Limits.MaxConcurrentWrites, share: cfg.Limits.PerPrincipalWrites,
				capKey: "max_concurrent_writes", shareKey: "per_principal_writes", waitKey: "queue_wait",
				maxQueue: cfg.Limits.MaxQueuedStreams, wait: cfg.Limits.QueueWait.Duration, minRate: cfg.Limits.MinStreamRate}).stream(),
			newAdmission("DoGet", admissionLimits{capacity: cfg.Limits.MaxConcurrentQueries, share: cfg.Limits.PerPrincipalQueries,
				capKey: "max_concurrent_queries", shareKey: "per_principal_queries", waitKey: "query_queue_wait",
				maxQueue: cfg.Limits.MaxQueuedStreams, wait: cfg.Limits.QueryQueueWait.Duration, minRate: cfg.Limits.MinStreamRate}).stream()),
	)...)
	flight.RegisterFlightServiceServer(s.grpc, queryService{handshakeService{h.WithActions(flightsql.NewFlightServer(checkedHandler{h}))}, h,
		resultCompressions[cfg.Engine.ResultCompression], resultCodecs[cfg.Engine.ResultCompression], &s.idle})
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	return s, nil
}

// handshakeService answers the Flight handshake. Authentication itself is
// done by the auth interceptor, which has already put the bearer token in
// the response header; the handshake only has to complete.
type handshakeService struct {
	flight.FlightServer
}

func (handshakeService) Handshake(stream flight.FlightService_HandshakeServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&flight.HandshakeResponse{ProtocolVersion: req.GetProtocolVersion()}); err != nil {
			return err
		}
	}
}

// Listen opens the configured listener, refusing a non-loopback address
// without authentication unless the configuration says insecure.
func (s *Server) Listen() (net.Listener, error) {
	if err := checkExposure(s.cfg.Listen, s.auth.Enabled(), s.cfg.Insecure); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", s.cfg.Listen, err)
	}
	return lis, nil
}

// checkExposure is the secure-by-default rule.
func checkExposure(addr string, authEnabled, insecure bool) error {
	if authEnabled || insecure {
		return nil
	}
	if _, _, err := splitHostPort(addr); err != nil {
		return err
	}
	if loopback(addr) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without authentication: enable auth in the configuration, listen on 127.0.0.1, or pass --insecure", addr)
}

// loopback tells an address only reachable from this machine.
func loopback(addr string) bool {
	host, _, err := splitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func splitHostPort(addr string) (string, string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("%q is not host:port", addr)
	}
	return strings.Trim(host, "[]"), port, nil
}

// Serve serves on lis until Shutdown.
func (s *Server) Serve(lis net.Listener) error {
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.log.Info("flightgw serving", "addr", lis.Addr().String(), "version", version.Version, "auth", s.auth.Enabled(),
		"tls", s.cfg.TLS.Enabled(), "client_certs", s.cfg.TLS.ClientCAFile != "",
		"catalogs", len(s.catalogs), "max_batch_bytes", s.cfg.Limits.MaxBatchBytes)
	if s.auth.Enabled() && !s.cfg.TLS.Enabled() && !loopback(s.cfg.Listen) {
		s.log.Warn("authentication without TLS on a non-loopback address: passwords and tokens cross the network in clear text; set tls.cert_file and tls.key_file, or terminate TLS in front of the gateway")
	}
	s.reclaim.start()
	s.maintain.start(s.txns)
	if _, set := os.LookupEnv("GOGC"); !set {
		s.gcStop = startGCFloor(s.cfg.Limits.GCMinHeap, s.cfg.Limits.GCPercent)
	}
	err := s.grpc.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown stops accepting calls, lets in-flight calls finish within the
// grace period, then cancels what is left; open transactions are rolled
// back and their staged files discarded; catalogs are closed.
func (s *Server) Shutdown() {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	grace := time.After(s.cfg.Timeouts.ShutdownGrace.Duration)
	if n, what := s.calls.summary(); n > 0 {
		s.log.Info("shutdown waits for calls in flight", "calls", n, "methods", what, "grace", s.cfg.Timeouts.ShutdownGrace)
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-tick.C:
			if n, what := s.calls.summary(); n > 0 {
				s.log.Info("shutdown still waiting", "calls", n, "methods", what)
			}
		case <-done:
			waiting = false
		case <-grace:
			n, what := s.calls.summary()
			s.log.Warn("shutdown grace period over; cancelling in-flight calls", "grace", s.cfg.Timeouts.ShutdownGrace, "calls", n, "methods", what)
			s.grpc.Stop()
			<-done
			waiting = false
		}
	}
	s.reclaim.stop()
	s.maintain.stop()
	s.idle.wait()
	if s.gcStop != nil {
		s.gcStop()
	}
	if s.peers != nil {
		s.peers.close()
	}
	s.txns.Close()
	s.closeCatalogs()
	s.log.Info("flightgw stopped")
}

// openEngine opens the SQL engine. A build without it (no engine.BuildTag)
// serves everything but SQL rather than failing, and says so once at start
// so that an operator who built with a plain `go build` sees why queries
// are refused. An engine that fails to open fails the start.
func openEngine(cfg *Config, log *slog.Logger) (*engine.Engine, error) {
	if !engine.Built {
		log.Warn("SQL engine not built into this binary: SQL queries are refused", "build_tag", engine.BuildTag)
		return nil, nil
	}
	eng, err := engine.New(engine.Options{MemoryLimit: cfg.Engine.MemoryLimit, TempDir: cfg.Engine.TempDir, Threads: cfg.Engine.Threads})
	if err != nil {
		return nil, err
	}
	log.Info("SQL engine ready", "memory_limit", cfg.Engine.MemoryLimit, "temp_dir", cfg.Engine.TempDir)
	return eng, nil
}

func (s *Server) closeCatalogs() {
	if s.engine != nil {
		_ = s.engine.Close()
		s.engine = nil
	}
	for _, c := range s.catalogs {
		if cl, ok := c.Provider.(catalogs.Closer); ok {
			if err := cl.Close(); err != nil {
				s.log.Warn("close catalog", "catalog", c.Name, "err", err)
			}
		}
	}
}

// Listening is where a gateway that Run started serves, told to its
// callers once it listens (flightgw serve prints the next step from it).
type Listening struct {
	Addr net.Addr
	// TLS and Auth tell whether clients need grpc+tls:// and credentials.
	TLS, Auth bool
}

// Run serves until ctx is cancelled, then shuts down gracefully. Each of
// ready is called once the gateway listens.
func Run(ctx context.Context, cfg *Config, log *slog.Logger, ready ...func(Listening)) error {
	s, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	lis, err := s.Listen()
	if err != nil {
		s.txns.Close()
		s.closeCatalogs()
		return err
	}
	// The side listeners (pprof, HTTP health): one that cannot start
	// stops the gateway before it serves.
	for _, side := range []struct {
		key, addr string
		start     func(string) (func(), error)
	}{
		{"debug.pprof_listen", cfg.Debug.PprofListen, func(a string) (func(), error) { return servePprof(a, log) }},
		{"health.listen", cfg.Health.Listen, func(a string) (func(), error) {
			stop, _, err := s.serveHealthHTTP(a)
			return stop, err
		}},
	} {
		if side.addr == "" {
			continue
		}
		stop, err := side.start(side.addr)
		if err != nil {
			lis.Close()
			s.txns.Close()
			s.closeCatalogs()
			return fmt.Errorf("%s: %w", side.key, err)
		}
		defer stop()
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(lis) }()
	for _, f := range ready {
		f(Listening{Addr: lis.Addr(), TLS: cfg.TLS.Enabled(), Auth: s.auth.Enabled()})
	}
	select {
	case err := <-errc:
		s.Shutdown()
		return err
	case <-ctx.Done():
		log.Info("shutting down", "grace", cfg.Timeouts.ShutdownGrace)
		s.Shutdown()
		return <-errc
	}
}
