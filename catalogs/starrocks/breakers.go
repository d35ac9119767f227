package starrocks

import "github.com/flightgw/flightgw/catalogs"

// Breakers reports the state of the breaker of the StarRocks HTTP API
// (catalogs.BreakerReporter).
func (p *Provider) Breakers() []catalogs.Breaker {
	return []catalogs.Breaker{{Name: "http", State: p.http.remote.State()}}
}
