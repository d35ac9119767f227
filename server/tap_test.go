package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// TestObserveTap: a call the authentication tap refuses is logged and
// counted by its method, and one naming a method the server does not
// serve as "unknown" (the label stays bounded); a call let through is
// left to the interceptors.
func TestObserveTap(t *testing.T) {
	m := newMetrics(nil)
	var logs bytes.Buffer
	refuse := func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if strings.HasSuffix(info.FullMethodName, "/DoGet") {
			return ctx, nil
		}
		return nil, status.Error(codes.Unauthenticated, "no credentials")
	}
	observed := observeTap(refuse, m, slog.New(slog.NewTextHandler(&logs, nil)))
	for _, method := range []string{"/arrow.flight.protocol.FlightService/GetFlightInfo", "/evil/" + strings.Repeat("x", 100), "/arrow.flight.protocol.FlightService/DoGet"} {
		_, _ = observed(context.Background(), &tap.Info{FullMethodName: method})
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	scrape := rec.Body.String()
	for _, want := range []string{`flightgw_rpcs_total{code="Unauthenticated",method="GetFlightInfo"} 1`, `flightgw_rpcs_total{code="Unauthenticated",method="unknown"} 1`} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics lack %s:\n%s", want, scrape)
		}
	}
	if strings.Contains(scrape, `method="DoGet"`) || strings.Contains(scrape, "evil") {
		t.Errorf("metrics count what the tap let through, or an unbounded method:\n%s", scrape)
	}
	if !strings.Contains(logs.String(), "method=/arrow.flight.protocol.FlightService/GetFlightInfo code=Unauthenticated") || strings.Contains(logs.String(), "evil") {
		t.Errorf("log = %s", logs.String())
	}
}
