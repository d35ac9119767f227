package lake

import (
	"strconv"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// The properties of the commit loop and of the calls to remote storage
// and catalog services: one dialect (names, units, bounds, defaults) for
// every table format.
const (
	// PropCommitRetries bounds the commit attempts after the first.
	PropCommitRetries = "commit.retry.num-retries"
	// PropCommitMinWait and PropCommitMaxWait bound the backoff between
	// commit attempts, in milliseconds.
	PropCommitMinWait = "commit.retry.min-wait-ms"
	PropCommitMaxWait = "commit.retry.max-wait-ms"
	// PropCommitTotalTimeout bounds the whole commit loop, in ms.
	PropCommitTotalTimeout = "commit.retry.total-timeout-ms"
	// The remote calls' properties are every backend's
	// (catalogs/remoteprops.go): the same names here.
	PropRemoteTimeout   = catalogs.PropRemoteTimeout
	PropRemoteAttempts  = catalogs.PropRemoteAttempts
	PropBreakerFailures = catalogs.PropBreakerFailures
	PropBreakerOpen     = catalogs.PropBreakerOpen
)

// DefaultRemote bounds every remote call unless the catalog's properties
// say otherwise.
var DefaultRemote = catalogs.RemotePolicy{Timeout: 30 * time.Second, Attempts: 3, BreakerFailures: 5, BreakerOpen: 30 * time.Second}

// CommonKeys are the properties ParseCommon reads.
var CommonKeys = map[string]bool{PropCommitRetries: true, PropCommitMinWait: true, PropCommitMaxWait: true,
	PropCommitTotalTimeout: true, PropRemoteTimeout: true, PropRemoteAttempts: true, PropBreakerFailures: true,
	PropBreakerOpen: true}

// IntProp is an integer property: its key, its least value, and where the
// parsed value goes.
type IntProp struct {
	Key string
	Min int64
	Set func(int64)
}

// ParseInts parses the integer properties of ps that props holds: each
// an integer in [Min, 2^40], else ErrInvalidArgument naming the key.
func ParseInts(props map[string]string, ps ...IntProp) error {
	for _, p := range ps {
		s, ok := props[p.Key]
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < p.Min || v > 1<<40 {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not an integer in [%d, 2^40]", p.Key, s, p.Min)
		}
		p.Set(v)
	}
	return nil
}

// ParseBool parses a true/false property into dst when props holds it.
func ParseBool(props map[string]string, key string, dst *bool) error {
	s, ok := props[key]
	if !ok {
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not true or false", key, s)
	}
	*dst = b
	return nil
}

// ParseCommon reads the commit loop's and the remote calls' properties
// over DefaultRetry and DefaultRemote.
func ParseCommon(props map[string]string) (Retry, catalogs.RemotePolicy, error) {
	r, rp := DefaultRetry, DefaultRemote
	err := ParseInts(props,
		IntProp{PropCommitRetries, 0, func(v int64) { r.Retries = int(v) }},
		IntProp{PropCommitMinWait, 1, func(v int64) { r.MinWait = ms(v) }},
		IntProp{PropCommitMaxWait, 1, func(v int64) { r.MaxWait = ms(v) }},
		IntProp{PropCommitTotalTimeout, 1, func(v int64) { r.TotalTimeout = ms(v) }},
	)
	if err != nil {
		return r, rp, err
	}
	if rp, err = catalogs.ParseRemote(props, DefaultRemote, nil); err != nil {
		return r, rp, err
	}
	if r.MinWait > r.MaxWait {
		return r, rp, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: exceeds %q", PropCommitMinWait, PropCommitMaxWait)
	}
	return r, rp, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
