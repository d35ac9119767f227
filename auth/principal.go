package auth

import "context"

// DefaultRealm is the realm of the anonymous principal and of catalogs
// configured without one.
const DefaultRealm = "default"

// Principal is an authenticated caller.
type Principal struct {
	// Name is the user or token name.
	Name string
	// Realm scopes what the principal can see.
	Realm string
	// Anonymous is true when authentication is disabled.
	Anonymous bool
}

// ID is a stable identity for binding resources (transactions, sessions)
// to their owner.
func (p Principal) ID() string { return p.Realm + "/" + p.Name }

// Anonymous is the principal of every call when authentication is off.
var Anonymous = Principal{Name: "anonymous", Realm: DefaultRealm, Anonymous: true}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of the call. A context without one (a
// call that bypassed the interceptors, such as an in-process test) is
// treated as no principal at all: ok is false.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
