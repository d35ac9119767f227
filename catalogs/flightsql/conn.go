package flightsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/flightframe"
)

// conn is the connection to one upstream address: the client, the
// bearer token the handshake answered (or the static one) and the guard
// every unary call passes.
type conn struct {
	cfg    config
	name   string // the catalog's, for messages
	addr   string
	client *fsql.Client
	remote *catalogs.Remote
	// caller is set on a connection whose static token is a caller's
	// forwarded bearer token (a unit of work's), not the catalog's.
	caller bool

	mu    sync.Mutex
	token catalogs.Secret // "Bearer ..." header value; zero before a handshake
}

// streamWindow is the HTTP/2 flow-control window of a connection to an
// upstream and of each of its streams: how much of a result the
// upstream may send before the gateway has read it. gRPC's default (64
// KiB, grown by its bandwidth estimate) keeps a loopback or LAN upstream
// waiting on the gateway's window updates: a window of 8 MiB streamed
// 10M rows about 7% faster (docs/upstream.md). It bounds what gRPC
// buffers unread per stream (the connection's window is given back as
// data arrives, a stream's as it is read), beside the batches read
// ahead (endpointBuffer).
const streamWindow = 8 << 20

// dial connects to addr (the configured one, or an allowed endpoint
// location) with the catalog's TLS and credentials. It does not contact
// the upstream: gRPC connects on the first call.
func dial(cfg config, name, addr string, remote *catalogs.Remote) (*conn, error) {
	creds := insecure.NewCredentials()
	if cfg.tls != nil {
		creds = credentials.NewTLS(cfg.tls.Clone())
	}
	// The codec decodes a result's FlightData without protobuf's second
	// copy, or keeps it as received to relay (flightframe); the pool does
	// not clear the buffers it gives gRPC, which writes over them all.
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.ForceCodecV2(flightframe.NewClientCodec())),
		experimental.WithBufferPool(&flightframe.DirtyPool{}),
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(streamWindow)}
	if cfg.keepalive > 0 {
		opts = append(opts, grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: cfg.keepalive, Timeout: cfg.timeout}))
	}
	cl, err := fsql.NewClient(addr, nil, nil, opts...)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: upstream %s: %v", name, addr, err)
	}
	c := &conn{cfg: cfg, name: name, addr: addr, client: cl, remote: remote}
	if !cfg.token.IsZero() {
		c.token = catalogs.NewSecret("Bearer " + cfg.token.Reveal())
	}
	return c, nil
}

func (c *conn) close() error { return c.client.Close() }

// outgoing adds the credential and the configured headers to ctx. With a
// user and no token yet it runs the Basic handshake first.
func (c *conn) outgoing(ctx context.Context) (context.Context, error) {
	tok, fwd := forwarded(ctx)
	if !fwd {
		var err error
		if tok, err = c.bearer(ctx); err != nil {
			return nil, err
		}
	}
	kv := make([]string, 0, 2*len(c.cfg.headers)+2)
	for k, v := range c.cfg.headers {
		kv = append(kv, k, v)
	}
	if !tok.IsZero() {
		kv = append(kv, "authorization", tok.Reveal())
	}
	return metadata.AppendToOutgoingContext(ctx, kv...), nil
}

// bearer is the token to send, after a handshake when there is none.
func (c *conn) bearer(ctx context.Context) (catalogs.Secret, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.token.IsZero() || c.cfg.user == "" {
		return c.token, nil
	}
	hctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	for k, v := range c.cfg.headers {
		hctx = metadata.AppendToOutgoingContext(hctx, k, v)
	}
	out, err := c.client.Client.AuthenticateBasicToken(hctx, c.cfg.user, c.cfg.password.Reveal())
	if err != nil {
		return catalogs.Secret{}, c.classify(err, "handshake as user "+c.cfg.user)
	}
	md, _ := metadata.FromOutgoingContext(out)
	if v := md.Get("authorization"); len(v) > 0 && v[len(v)-1] != "" {
		c.token = catalogs.NewSecret(v[len(v)-1])
	}
	return c.token, nil
}

// forget drops a token the upstream refused, so that the next call
// handshakes again (a static token is kept: there is no other).
func (c *conn) forget(tok catalogs.Secret) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.user != "" && c.token.Reveal() == tok.Reveal() {
		c.token = catalogs.Secret{}
	}
}

// call runs one unary call through the guard. A call the upstream
// refuses as Unauthenticated after a handshake (an expired token) is
// handshaken again and repeated once: it did not run.
func call[T any](ctx context.Context, c *conn, idempotent bool, what string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	_, fwd := forwarded(ctx)
	for attempt := 0; ; attempt++ {
		var tok catalogs.Secret
		if !fwd {
			var err error
			if tok, err = c.bearer(ctx); err != nil {
				return zero, err
			}
		}
		v, err := catalogs.Guard(ctx, c.remote, idempotent, func(actx context.Context) (T, error) {
			octx, err := c.outgoing(actx)
			if err != nil {
				return zero, err
			}
			return fn(octx)
		})
		if err == nil {
			return v, nil
		}
		if status.Code(err) == codes.Unauthenticated && c.cfg.user != "" && !fwd && attempt == 0 {
			c.forget(tok)
			continue
		}
		return zero, c.classifyAs(err, what, fwd || c.caller)
	}
}

// errUnimplemented marks a call the upstream does not implement, for the
// callers that have another way (GetSqlInfo, GetTables).
var errUnimplemented = errors.New("unimplemented")

// transient tells an outage of the upstream (retried, counted by the
// breaker) from an answer.
func transient(err error) bool {
	if errors.Is(err, catalogs.ErrUnavailable) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF)
}

// classify maps an upstream error to the catalogs kinds, naming the
// catalog, the upstream and what was being done. A status message is the
// upstream's and is kept; credentials are never in it.
func (c *conn) classify(err error, what string) error { return c.classifyAs(err, what, c.caller) }

// classifyAs is classify for a call that carried the caller's forwarded
// token (caller) or the catalog's credential.
func (c *conn) classifyAs(err error, what string, caller bool) error {
	if err == nil {
		return nil
	}
	if catalogs.Kind(err) != nil {
		return err
	}
	prefix := fmt.Sprintf("catalog %q: upstream %s: %s", c.name, c.addr, what)
	if catalogs.ErrBreakerOpen(err) {
		return catalogs.Errorf(catalogs.ErrUnavailable, "%s: the upstream is failing, calls are refused for up to %s (circuit breaker open)", prefix, c.cfg.breakerOpen)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	st, _ := status.FromError(err)
	msg := st.Message()
	switch st.Code() {
	case codes.NotFound:
		return catalogs.Errorf(catalogs.ErrNotFound, "%s: %s", prefix, msg)
	case codes.AlreadyExists:
		return catalogs.Errorf(catalogs.ErrAlreadyExists, "%s: %s", prefix, msg)
	case codes.InvalidArgument, codes.OutOfRange:
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "%s: %s", prefix, msg)
	case codes.PermissionDenied:
		return catalogs.Errorf(catalogs.ErrPermissionDenied, "%s: %s", prefix, msg)
	case codes.Unauthenticated:
		if caller {
			// The caller's own token: the caller logs in again.
			return catalogs.Errorf(catalogs.ErrUnauthenticated, "%s: the upstream refused the caller's forwarded bearer token: %s", prefix, msg)
		}
		// The gateway's service credential was refused: that is the
		// operator's configuration, not the client's login.
		return catalogs.Errorf(catalogs.ErrPermissionDenied, "%s: the upstream refused the catalog's credential: %s", prefix, msg)
	case codes.FailedPrecondition:
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "%s: %s", prefix, msg)
	case codes.Aborted:
		return catalogs.Errorf(catalogs.ErrConflict, "%s: %s", prefix, msg)
	case codes.Unimplemented:
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "%s: the upstream does not implement it (%w): %s", prefix, errUnimplemented, msg)
	case codes.Canceled:
		return fmt.Errorf("%s: %w: %s", prefix, context.Canceled, msg)
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Unknown, codes.Internal, codes.DataLoss:
		return catalogs.Errorf(catalogs.ErrUnavailable, "%s: %s: %s", prefix, strings.ToLower(st.Code().String()), msg)
	}
	return catalogs.Wrap(catalogs.ErrUnavailable, err, prefix)
}
