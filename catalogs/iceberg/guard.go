package iceberg

import "github.com/flightgw/flightgw/catalogs"

// Calls to the catalog service (REST or Postgres) and to object storage go
// through a catalogs.Remote each (p.remote, p.storage): a breaker, a
// timeout per attempt and a bounded retry of idempotent calls, with
// isTransient telling an outage from an answer.

// Breakers reports the state of the breakers of the catalog service and
// of object storage (catalogs.BreakerReporter).
func (p *Provider) Breakers() []catalogs.Breaker {
	return []catalogs.Breaker{{Name: "catalog", State: p.remote.State()}, {Name: "storage", State: p.storage.State()}}
}
