package catalogs

import "context"

type relayKey struct{}

// WithRelay marks ctx as a query whose caller sends the result on as
// Flight data and takes relayed batches (a QueryPusher's record batches
// kept as its upstream sent them, decoded only when their columns are
// read: catalogs/flightsql, internal/flightframe). Without it, a backend
// hands on decoded batches, for callers that read every column anyway
// and must see a batch that does not decode as an error.
func WithRelay(ctx context.Context) context.Context { return context.WithValue(ctx, relayKey{}, true) }

// Relay reports whether ctx takes relayed batches (WithRelay).
func Relay(ctx context.Context) bool {
	v, _ := ctx.Value(relayKey{}).(bool)
	return v
}
