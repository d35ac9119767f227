package starrocks

import (
	"github.com/sony/gobreaker/v2"

	"github.com/flightgw/flightgw/catalogs"
)

// Breakers reports the state of the breaker of the StarRocks HTTP API
// (catalogs.BreakerReporter).
func (p *Provider) Breakers() []catalogs.Breaker {
	st := catalogs.BreakerClosed
	switch p.http.cb.State() {
	case gobreaker.StateOpen:
		st = catalogs.BreakerOpen
	case gobreaker.StateHalfOpen:
		st = catalogs.BreakerHalfOpen
	}
	return []catalogs.Breaker{{Name: "http", State: st}}
}
