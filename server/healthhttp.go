package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// serveHealthHTTP serves the gateway's health over plain HTTP on addr,
// for probes that cannot call gRPC over TLS (Kubernetes' gRPC probe has
// no TLS): /healthz answers 200 while the process runs (liveness), and
// /readyz 200 while the gRPC health service reports SERVING, 503 once a
// shutdown began (readiness: the load balancer stops sending calls while
// in-flight ones finish), and /metrics the gateway's Prometheus metrics
// (metrics.go). Nothing else is served there.
func (s *Server) serveHealthHTTP(addr string) (stop func(), bound string, err error) {
	if err := checkHealthExposure(addr, s.auth.Enabled(), s.cfg.Insecure, s.cfg.Health.Public); err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		resp, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not serving")
			return
		}
		fmt.Fprintln(w, "serving")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}))
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("health HTTP server", "err", err)
		}
	}()
	s.log.Info("health HTTP serving", "addr", lis.Addr().String())
	return func() { _ = srv.Close() }, lis.Addr().String(), nil
}

// checkHealthExposure is the rule of health.listen: the gRPC listener's
// (a non-loopback address needs auth or --insecure), and, since /metrics
// is for operators (it names the catalogs of every realm and their
// traffic), health.public for a non-loopback address.
func checkHealthExposure(addr string, authEnabled, insecure, public bool) error {
	if err := checkExposure(addr, authEnabled, insecure); err != nil {
		return err
	}
	if !loopback(addr) && !public {
		return fmt.Errorf("refusing to serve health and metrics on %s: /metrics is for operators (it names every realm's catalogs); set health.public: true if only they reach that address, or listen on 127.0.0.1", addr)
	}
	return nil
}
