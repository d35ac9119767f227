package catalogs

// BreakerReporter is a Provider whose calls to services outside the
// process go through circuit breakers; it reports their states, for the
// gateway's metrics.
type BreakerReporter interface {
	// Breakers returns the state of each breaker, named by what it
	// guards ("catalog", "storage", "http").
	Breakers() []Breaker
}

// Breaker is the state of one circuit breaker.
type Breaker struct {
	Name  string
	State BreakerState
}

// BreakerState is a circuit breaker's state; the values are those the
// metric flightgw_breaker_state reports.
type BreakerState int

// Breaker states.
const (
	// BreakerClosed lets calls through.
	BreakerClosed BreakerState = iota
	// BreakerHalfOpen lets a trial call through after an open period.
	BreakerHalfOpen
	// BreakerOpen refuses calls at once.
	BreakerOpen
)
