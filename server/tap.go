package server

import (
	"context"
	"log/slog"
	"time"

	flightpb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/tap"
)

// observeTap runs the authentication tap (auth.Authenticator.Tap) and
// logs and counts the calls it refuses as the interceptors do the others:
// such a call never reaches them. The method a refused call named is the
// client's word, so a name the server does not serve is counted as
// "unknown", which keeps the metric's labels bounded.
func observeTap(check tap.ServerInHandle, m *metrics, log *slog.Logger) tap.ServerInHandle {
	known := map[string]bool{}
	desc := flightpb.FlightService_ServiceDesc
	for _, md := range desc.Methods {
		known["/"+desc.ServiceName+"/"+md.MethodName] = true
	}
	for _, sd := range desc.Streams {
		known["/"+desc.ServiceName+"/"+sd.StreamName] = true
	}
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		start := time.Now()
		out, err := check(ctx, info)
		if err != nil {
			method := info.FullMethodName
			if !known[method] {
				method = "unknown"
			}
			m.observe(method, start, err)
			logCall(log, method, start, err)
		}
		return out, err
	}
}
