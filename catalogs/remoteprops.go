package catalogs

import (
	"strconv"
	"time"
)

// The properties of the calls to a remote service — a catalog, an object
// store, a database, an upstream server — in one dialect for every
// backend: the names, units (milliseconds) and bounds below. Defaults are
// each backend's (a database behind Stream Load waits longer than an
// object store).
const (
	// PropRemoteTimeout bounds one remote call, in ms.
	PropRemoteTimeout = "remote.timeout-ms"
	// PropRemoteAttempts bounds the attempts of an idempotent remote call.
	PropRemoteAttempts = "remote.max-attempts"
	// PropBreakerFailures consecutive failures open the circuit breaker.
	PropBreakerFailures = "remote.breaker.failures"
	// PropBreakerOpen is how long the open breaker refuses calls, in ms.
	PropBreakerOpen = "remote.breaker.open-ms"
)

// RemoteKeys are the properties ParseRemote reads.
var RemoteKeys = map[string]bool{PropRemoteTimeout: true, PropRemoteAttempts: true, PropBreakerFailures: true, PropBreakerOpen: true}

// ServiceAliases are the older spellings of the remote properties that
// the StarRocks and upstream Flight SQL catalogs took before the one
// dialect (a Go duration for timeout and breaker_open, a count for
// retries and breaker_failures). They are still read, each in its old
// form; a property given in both spellings is refused.
var ServiceAliases = map[string]string{
	"timeout": PropRemoteTimeout, "retries": PropRemoteAttempts,
	"breaker_failures": PropBreakerFailures, "breaker_open": PropBreakerOpen,
}

// ParseRemote reads the remote properties of props over def, and those
// of aliases (old spelling → canonical name; nil for none). Every error is
// ErrInvalidArgument naming the property.
func ParseRemote(props map[string]string, def RemotePolicy, aliases map[string]string) (RemotePolicy, error) {
	p := def
	set := func(key, s string, duration bool) error {
		var v int64
		var err error
		if duration {
			var d time.Duration
			if d, err = time.ParseDuration(s); err == nil {
				v = d.Milliseconds()
			}
		} else {
			v, err = strconv.ParseInt(s, 10, 64)
		}
		if err != nil || v < 1 || v > 1<<40 {
			unit := "an integer in [1, 2^40]"
			if duration {
				unit = "a duration of at least 1ms"
			}
			return Errorf(ErrInvalidArgument, "property %q: %q is not %s", key, s, unit)
		}
		switch canonical(key, aliases) {
		case PropRemoteTimeout:
			p.Timeout = time.Duration(v) * time.Millisecond
		case PropRemoteAttempts:
			p.Attempts = int(min(v, 1<<20))
		case PropBreakerFailures:
			p.BreakerFailures = uint32(min(v, 1<<31))
		case PropBreakerOpen:
			p.BreakerOpen = time.Duration(v) * time.Millisecond
		}
		return nil
	}
	for key := range RemoteKeys {
		if s, ok := props[key]; ok {
			if err := set(key, s, false); err != nil {
				return def, err
			}
		}
	}
	for old, key := range aliases {
		s, ok := props[old]
		if !ok {
			continue
		}
		if _, both := props[key]; both {
			return def, Errorf(ErrInvalidArgument, "property %q: set %q or its older spelling %q, not both", key, key, old)
		}
		if err := set(old, s, key == PropRemoteTimeout || key == PropBreakerOpen); err != nil {
			return def, err
		}
	}
	return p, nil
}

func canonical(key string, aliases map[string]string) string {
	if c, ok := aliases[key]; ok {
		return c
	}
	return key
}
