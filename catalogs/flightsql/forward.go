package flightsql

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/flightgw/flightgw/catalogs"
)

// forwardKey marks a context whose upstream calls carry the caller's own
// bearer token ("Bearer ..." as a catalogs.Secret) instead of the
// catalog's credential (forward_caller_token).
type forwardKey struct{}

// forwarded is the caller's token a context carries, if any.
func forwarded(ctx context.Context) (catalogs.Secret, bool) {
	tok, ok := ctx.Value(forwardKey{}).(catalogs.Secret)
	return tok, ok
}

// asCaller marks ctx so that the upstream calls made with it carry the
// caller's bearer token, when the catalog forwards it; a context that is
// no caller's (the gateway's own calls) is left to the catalog's
// credential.
func (p *Provider) asCaller(ctx context.Context) (context.Context, error) {
	tok, ok, err := p.callerToken(ctx)
	if err != nil || !ok {
		return ctx, err
	}
	return context.WithValue(ctx, forwardKey{}, tok), nil
}

// callerToken is the bearer token the caller sent the gateway, when the
// catalog forwards it. ok is false for a context without a caller's call
// in it. A caller's call without a bearer token (Basic credentials on
// every call, or the gateway's auth off) is refused: falling back to the
// catalog's credential would give the caller the service's rights
// upstream, which forwarding is configured to avoid; a Basic password is
// never forwarded.
func (p *Provider) callerToken(ctx context.Context) (tok catalogs.Secret, ok bool, err error) {
	if !p.cfg.forward {
		return catalogs.Secret{}, false, nil
	}
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return catalogs.Secret{}, false, nil
	}
	for _, v := range md.Get("authorization") {
		scheme, t, _ := strings.Cut(strings.TrimSpace(v), " ")
		if t = strings.TrimSpace(t); strings.EqualFold(scheme, "bearer") && t != "" {
			return catalogs.NewSecret("Bearer " + t), true, nil
		}
	}
	return catalogs.Secret{}, false, catalogs.Errorf(catalogs.ErrUnauthenticated,
		"catalog %q: upstream %s: the catalog forwards the caller's bearer token (%s) and this call carries none: log in with a handshake and send the bearer token it answers", p.name, p.cfg.addr, propForward)
}
