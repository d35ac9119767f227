package flightsql

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/flightgw/flightgw/catalogs"
)

// Type is the catalog type name of the backend.
const Type = "flightsql"

func init() {
	catalogs.Register(Type, func(ctx context.Context, name string, props map[string]string) (catalogs.Provider, error) {
		return Open(ctx, name, props)
	})
}

// Provider is a catalog over one upstream Flight SQL server.
type Provider struct {
	name   string
	cfg    config
	log    *slog.Logger
	remote *catalogs.Remote
	main   *conn

	connMu  sync.Mutex
	located map[string]*conn // connections to allowed endpoint locations

	infoMu sync.Mutex
	info   *caps
	// canCancel mirrors info.cancel for readers, which must not take
	// infoMu (GetSqlInfo itself is read under it).
	canCancel atomic.Bool
	// cancels are the CancelFlightInfo calls of readers released early,
	// which Close waits for: one still running when Close closes the
	// connection would dereference the closed client (a crash).
	cancelMu sync.Mutex
	closed   bool
	cancels  sync.WaitGroup

	// noSchemas is set once the upstream's GetTables did not include
	// table schemas: specs come from the probe query from then on.
	probeOnly atomic.Bool

	specMu sync.Mutex
	specs  map[string]cachedSpec // table specs kept for schema_ttl, by table

	mu   sync.Mutex
	txns map[string]*upTxn // open upstream transactions, by unit of work
	// ended are the transactions that ended lately, for the later tables
	// of a unit of work that wrote several (bounded by maxEnded).
	ended map[string]*upTxn
}

var (
	_ catalogs.Provider        = (*Provider)(nil)
	_ catalogs.Lister          = (*Provider)(nil)
	_ catalogs.Scanner         = (*Provider)(nil)
	_ catalogs.QueryPusher     = (*Provider)(nil)
	_ catalogs.StreamWriter    = (*Provider)(nil)
	_ catalogs.Discarder       = (*Provider)(nil)
	_ catalogs.Overwriter      = (*Provider)(nil)
	_ catalogs.TableManager    = (*Provider)(nil)
	_ catalogs.BreakerReporter = (*Provider)(nil)
	_ catalogs.Closer          = (*Provider)(nil)
)

// Open builds the catalog called name from its properties. It does not
// wait for the upstream: a catalog whose upstream is down opens, and its
// calls fail Unavailable (naming the upstream) until it is back.
func Open(_ context.Context, name string, props map[string]string) (*Provider, error) {
	cfg, err := parseConfig(props)
	if err != nil {
		return nil, err
	}
	p := &Provider{name: name, cfg: cfg, located: map[string]*conn{}, specs: map[string]cachedSpec{}, txns: map[string]*upTxn{}, ended: map[string]*upTxn{},
		log: slog.Default().With("catalog", name, "backend", Type, "upstream", cfg.addr)}
	p.remote = catalogs.NewRemote("flightsql:"+name, catalogs.RemotePolicy{Timeout: cfg.timeout, Attempts: cfg.retries,
		BreakerFailures: cfg.breakerFailures, BreakerOpen: cfg.breakerOpen}, transient)
	if p.main, err = dial(cfg, name, cfg.addr, p.remote); err != nil {
		return nil, err
	}
	return p, nil
}

// Close implements catalogs.Closer: open upstream transactions are rolled
// back, connections closed.
func (p *Provider) Close() error {
	p.cancelMu.Lock()
	p.closed = true
	p.cancelMu.Unlock()
	p.cancels.Wait()
	p.mu.Lock()
	txns := p.txns
	p.txns = map[string]*upTxn{}
	p.mu.Unlock()
	for _, x := range txns {
		p.endTxn(context.Background(), x, false)
	}
	errs := []error{p.main.close()}
	p.connMu.Lock()
	for _, c := range p.located {
		errs = append(errs, c.close())
	}
	p.connMu.Unlock()
	return errors.Join(errs...)
}

// Breakers implements catalogs.BreakerReporter.
func (p *Provider) Breakers() []catalogs.Breaker {
	return []catalogs.Breaker{{Name: "upstream", State: p.remote.State()}}
}

// GetSecurityContext implements catalogs.Provider: the catalog's service
// credential, scoped to the table. It does not expire here: the upstream
// decides its tokens' lifetime and a refused one is handshaken again.
func (p *Provider) GetSecurityContext(ctx context.Context, t catalogs.TableIdent) (catalogs.SecurityContext, error) {
	if _, err := p.GetTableSpec(ctx, t); err != nil {
		return catalogs.SecurityContext{}, err
	}
	tok := p.cfg.token
	if tok.IsZero() {
		tok = p.cfg.password
	}
	scope := t
	return catalogs.SecurityContext{
		Encryption: catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone},
		Credentials: catalogs.CatalogCredential{Token: tok,
			Scope: catalogs.CredentialScope{Kind: catalogs.ScopeTableReadWrite, Table: &scope}},
	}, nil
}

// cachedCaps is the last capabilities read, if any (no call).
func (p *Provider) cachedCaps() (caps, bool) {
	p.infoMu.Lock()
	defer p.infoMu.Unlock()
	if p.info == nil {
		return caps{}, false
	}
	return *p.info, true
}
