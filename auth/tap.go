package auth

import (
	"context"
	"encoding/base64"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// Tap checks a call's credentials from its headers, before gRPC reads a
// byte of its request: it is the server's grpc.InTapHandle, which the
// transport runs when a call's headers arrive. A call without
// credentials, with a bearer token that does not verify (an HMAC or a
// SHA-256, cheap enough for the transport's goroutine), or with Basic
// credentials of a locked-out user or address is refused there, so an
// unauthenticated caller gets nothing buffered. A password is not checked
// here: bcrypt takes tens of milliseconds, and the tap runs on the
// goroutine that reads the whole connection. A call with well-formed
// Basic credentials goes on to the interceptors, which check the password
// before a streaming call receives anything, and after a unary call's
// request (held to limits.max_request_bytes) arrived. The Flight
// handshake is such a call. The health service needs no credentials.
func (a *Authenticator) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if !a.enabled || strings.HasPrefix(info.FullMethodName, healthPrefix) {
		return ctx, nil
	}
	vals := info.Header.Get(authHeader)
	if len(vals) == 0 {
		return nil, status.Error(codes.Unauthenticated, "authentication required: send Basic credentials or a bearer token")
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	cred = strings.TrimSpace(cred)
	switch strings.ToLower(scheme) {
	case bearerScheme:
		if _, err := a.VerifyToken(cred); err != nil {
			return nil, err
		}
		return ctx, nil
	case basicScheme:
		user, _, err := basicCredentials(cred)
		if err != nil {
			return nil, err
		}
		if _, err := a.throttle.check(user, clientAddr(ctx)); err != nil {
			return nil, err
		}
		return ctx, nil
	default:
		return nil, status.Errorf(codes.Unauthenticated, "unsupported authorization scheme %q", scheme)
	}
}

// basicCredentials decodes the credentials of a Basic authorization.
func basicCredentials(cred string) (user, pass string, err error) {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(cred); err != nil {
			return "", "", status.Error(codes.Unauthenticated, "basic credentials are not valid base64")
		}
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", status.Error(codes.Unauthenticated, "basic credentials lack a ':'")
	}
	return user, pass, nil
}
