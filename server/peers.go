package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/sony/gobreaker/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/recovered"
)

// DefaultPeerTimeout bounds one call to a peer when cluster.peer_timeout
// is unset.
const DefaultPeerTimeout = 2 * time.Second

// peerKeepalive is how often a connection to a peer with a call open is
// pinged.
const peerKeepalive = 30 * time.Second

// peerAttempts is how many times a call to a peer is tried when it fails
// with a transient error (every call to a peer is idempotent).
const peerAttempts = 3

// maxPeerBreakers bounds the circuit breakers kept, one per peer address
// (a headless service's addresses change as replicas come and go).
const maxPeerBreakers = 1024

// peers reaches the gateway's other replicas: it forwards
// CancelFlightInfo to every one (cluster.peers), so that a query stops
// whichever replica serves its DoGet, and a call that names a transaction
// to the replica holding it (route.go). Each address gets a circuit breaker, each attempt a timeout, and
// a transient failure a bounded retry with backoff.
type peers struct {
	entries []string // host:port, as configured
	timeout time.Duration
	log     *slog.Logger
	// lookup resolves a host to its addresses (net.DefaultResolver).
	lookup func(ctx context.Context, host string) ([]string, error)
	// dial opens a client connection to addr.
	dial func(addr string) (*grpc.ClientConn, error)

	mu       sync.Mutex
	breakers map[string]*gobreaker.CircuitBreaker[struct{}]
	conns    map[string]*grpc.ClientConn // for forwarded calls (route.go)
}

// newPeers reaches entries with creds; maxMsg bounds a message either
// way (limits.max_batch_bytes: a forwarded call carries batches).
func newPeers(entries []string, timeout time.Duration, creds credentials.TransportCredentials, maxMsg int, log *slog.Logger) *peers {
	if timeout <= 0 {
		timeout = DefaultPeerTimeout
	}
	return &peers{
		entries: entries,
		timeout: timeout,
		log:     log,
		lookup:  net.DefaultResolver.LookupHost,
		dial: func(addr string) (*grpc.ClientConn, error) {
			return grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
				// A replica gone silent in a forwarded stream is noticed
				// (the server permits pings this often: server.go).
				grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: peerKeepalive, Timeout: 10 * time.Second}))
		},
		breakers: map[string]*gobreaker.CircuitBreaker[struct{}]{},
		conns:    map[string]*grpc.ClientConn{},
	}
}

// forwardedHeaders are the incoming headers a forwarded call carries: the
// caller's credentials, so that the peer authorizes the same principal.
var forwardedHeaders = []string{"authorization"}

// Cancel sends req to every peer address, in parallel, as the caller (its
// credentials forwarded) and marked forwarded, so that a peer cancels
// locally without forwarding again. It returns an error naming the
// addresses it could not reach, or that refused; a peer that does not run
// the query still records it as cancelled and refuses its tickets.
func (p *peers) Cancel(ctx context.Context, req *flight.CancelFlightInfoRequest) error {
	addrs, resolveErrs := p.resolve(ctx)
	out := metadata.Pairs(handlers.ForwardedHeader, "cancel")
	if in, ok := metadata.FromIncomingContext(ctx); ok {
		for _, k := range forwardedHeaders {
			if v := in.Get(k); len(v) > 0 {
				out.Set(k, v...)
			}
		}
	}
	callCtx := metadata.NewOutgoingContext(ctx, out)
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			func() {
				defer recovered.Catch(&err, "call to peer "+addr)
				err = p.call(callCtx, addr, req)
			}()
			if err != nil {
				errs[i] = fmt.Errorf("peer %s: %w", addr, err)
			}
		}()
	}
	wg.Wait()
	err := errors.Join(append(resolveErrs, errs...)...)
	if err == nil {
		p.log.Debug("cancel forwarded", "peers", len(addrs))
	}
	return err
}

// resolve expands the configured peers to addresses, deduplicated.
func (p *peers) resolve(ctx context.Context) ([]string, []error) {
	var addrs []string
	var errs []error
	for _, e := range p.entries {
		host, port, err := net.SplitHostPort(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("peer %s: %w", e, err))
			continue
		}
		if net.ParseIP(host) != nil {
			addrs = append(addrs, e)
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, p.timeout)
		ips, err := p.lookup(lctx, host)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("peer %s: resolving %s: %w", e, host, err))
			continue
		}
		for _, ip := range ips {
			addrs = append(addrs, net.JoinHostPort(ip, port))
		}
	}
	slices.Sort(addrs)
	return slices.Compact(addrs), errs
}

// call sends the cancel to one address, each attempt bounded by the
// peer timeout.
func (p *peers) call(ctx context.Context, addr string, req *flight.CancelFlightInfoRequest) error {
	return p.attempt(ctx, addr, peerAttempts, func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, p.timeout)
		defer cancel()
		return p.cancelOn(actx, addr, req)
	})
}

// attempt runs fn against addr through its breaker, at most n times: a
// transient failure (transientPeerError) is tried again after a backoff
// with jitter, while ctx lasts.
func (p *peers) attempt(ctx context.Context, addr string, n int, fn func(context.Context) error) error {
	cb := p.breaker(addr)
	var err error
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(50*time.Millisecond<<(i-1) + rand.N(50*time.Millisecond)):
			}
		}
		_, err = cb.Execute(func() (struct{}, error) { return struct{}{}, fn(ctx) })
		if err == nil || !transientPeerError(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (p *peers) cancelOn(ctx context.Context, addr string, req *flight.CancelFlightInfoRequest) error {
	conn, err := p.conn(addr)
	if err != nil {
		return err
	}
	res, err := flight.NewClientFromConn(conn, nil).CancelFlightInfo(ctx, req)
	if err != nil {
		return err
	}
	if res.GetStatus() != flight.CancelStatusCancelled {
		return fmt.Errorf("answered %s", res.GetStatus())
	}
	return nil
}

func (p *peers) breaker(addr string) *gobreaker.CircuitBreaker[struct{}] {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cb, ok := p.breakers[addr]; ok {
		return cb
	}
	if len(p.breakers) >= maxPeerBreakers {
		clear(p.breakers)
	}
	cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "peer " + addr,
		MaxRequests: 1,
		Timeout:     10 * time.Second,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 },
		// A peer's answer (even a refusal) shows it is up.
		IsSuccessful: func(err error) bool { return err == nil || !transientPeerError(err) },
	})
	p.breakers[addr] = cb
	return cb
}

// transientPeerError tells a failure worth retrying: the peer could not
// be reached or did not answer in time.
func transientPeerError(err error) bool {
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// peerList splits FLIGHTGW_CLUSTER_PEERS (comma or space separated).
func peerList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
