package flightsql

import (
	"context"
	"errors"
	"io"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/flightgw/flightgw/catalogs"
)

// query gets a FlightInfo (an idempotent call: it only plans) and reads
// every endpoint of it in order, streaming: one batch at a time is held.
// The reader's Release cancels what is still being read, upstream too
// (CancelFlightInfo, when the upstream supports it).
func (p *Provider) query(ctx context.Context, what string, get func(context.Context) (*flight.FlightInfo, error)) (*infoReader, error) {
	info, err := call(ctx, p.main, true, what, get)
	if err != nil {
		return nil, err
	}
	var schema *arrow.Schema
	if len(info.Schema) > 0 {
		if schema, err = flight.DeserializeSchema(info.Schema, nil); err != nil {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: %s: the FlightInfo's schema does not decode: %v", p.name, p.cfg.addr, what, err)
		}
	}
	// Every endpoint is checked before anything is read: a location off
	// the allowlist fails the query rather than its second half.
	conns := make([]*conn, len(info.Endpoint))
	for i, ep := range info.Endpoint {
		if conns[i], err = p.endpointConn(ep); err != nil {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: %s: %w", p.name, p.cfg.addr, what, err)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &infoReader{p: p, what: what, ctx: rctx, cancel: cancel, info: info, conns: conns, schema: schema}
	r.refs.Store(1)
	if r.schema == nil {
		// No schema in the FlightInfo: the first stream's is the result's.
		if !r.open() {
			err := r.err
			r.Release()
			if err == nil {
				err = catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: %s: the result has no schema", p.name, p.cfg.addr, what)
			}
			return nil, err
		}
	}
	return r, nil
}

// endpointConn is the connection an endpoint is read from: the main one
// for an endpoint without a location (or one that says to reuse the
// connection), else one to the location, which must be on the allowlist.
func (p *Provider) endpointConn(ep *flight.FlightEndpoint) (*conn, error) {
	for _, loc := range ep.GetLocation() {
		uri := loc.GetUri()
		if uri == "" || uri == "arrow-flight-reuse-connection://?" {
			return p.main, nil
		}
		u, err := url.Parse(uri)
		if err != nil || u.Host == "" {
			continue
		}
		if u.Host == p.cfg.addr {
			return p.main, nil
		}
		if !p.cfg.locationAllowed(u.Host) {
			continue
		}
		if (u.Scheme == "grpc+tls") != (p.cfg.tls != nil) {
			continue // credentials are only sent over the transport configured
		}
		return p.locationConn(u.Host)
	}
	if len(ep.GetLocation()) == 0 {
		return p.main, nil
	}
	return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition,
		"an endpoint is only served at %s, which is not on the catalog's %s (the gateway does not follow a FlightInfo to hosts it was not told to trust)", locations(ep), propLocations)
}

func locations(ep *flight.FlightEndpoint) []string {
	var out []string
	for _, l := range ep.GetLocation() {
		out = append(out, l.GetUri())
	}
	return out
}

// locationConn is the (cached) connection to an allowed location.
func (p *Provider) locationConn(host string) (*conn, error) {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if c, ok := p.located[host]; ok {
		return c, nil
	}
	c, err := dial(p.cfg, p.name, host, p.remote)
	if err != nil {
		return nil, err
	}
	p.located[host] = c
	return c, nil
}

// infoReader is an array.RecordReader over the endpoints of a FlightInfo.
type infoReader struct {
	p      *Provider
	what   string
	ctx    context.Context
	cancel context.CancelFunc
	info   *flight.FlightInfo
	conns  []*conn
	schema *arrow.Schema
	next   int // the endpoint to open next
	cur    *flight.Reader
	rec    arrow.RecordBatch
	err    error
	done   bool
	refs   atomic.Int64
}

var _ array.RecordReader = (*infoReader)(nil)

// open opens the next endpoint's stream; false when none is left (or on
// an error, in r.err).
func (r *infoReader) open() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.next >= len(r.info.Endpoint) {
		r.done = true
		return false
	}
	ep, c := r.info.Endpoint[r.next], r.conns[r.next]
	r.next++
	octx, err := c.outgoing(r.ctx)
	if err == nil {
		var s flight.FlightService_DoGetClient
		if s, err = c.client.Client.DoGet(octx, ep.GetTicket()); err == nil {
			r.cur, err = flight.NewRecordReader(s)
		}
	}
	if err != nil {
		r.fail(c, err)
		return false
	}
	if r.schema == nil {
		r.schema = r.cur.Schema()
	}
	return true
}

func (r *infoReader) fail(c *conn, err error) {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	c.remote.Record(err)
	r.err, r.done = c.classify(err, r.what), true
}

func (r *infoReader) Next() bool {
	r.rec = nil
	for !r.done {
		if r.cur == nil && !r.open() {
			return false
		}
		if r.cur.Next() {
			r.rec = r.cur.RecordBatch()
			return true
		}
		if err := r.cur.Err(); err != nil && !errors.Is(err, io.EOF) {
			r.fail(r.conns[r.next-1], err)
			return false
		}
		r.cur.Release()
		r.cur = nil
	}
	return false
}

func (r *infoReader) Schema() *arrow.Schema          { return r.schema }
func (r *infoReader) RecordBatch() arrow.RecordBatch { return r.rec }

// Record implements array.RecordReader.
//
// Deprecated: use RecordBatch.
func (r *infoReader) Record() arrow.RecordBatch { return r.rec }
func (r *infoReader) Err() error                { return r.err }
func (r *infoReader) Retain()                   { r.refs.Add(1) }

// Release ends the read. A read released before its end cancels its
// streams, and asks the upstream to cancel the query.
func (r *infoReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	early := !r.done
	r.cancel()
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if early && r.p.canCancel.Load() {
		r.p.goCancel(r.info)
	}
}

// goCancel asks the upstream, in the background, to cancel the query of
// info, unless the provider is closing.
func (p *Provider) goCancel(info *flight.FlightInfo) {
	p.cancelMu.Lock()
	defer p.cancelMu.Unlock()
	if p.closed {
		return
	}
	p.cancels.Go(func() { p.cancelInfo(info) })
}

// cancelInfo asks the upstream to stop a query nobody reads any more.
func (p *Provider) cancelInfo(info *flight.FlightInfo) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	octx, err := p.main.outgoing(ctx)
	if err != nil {
		return
	}
	if _, err := p.main.client.CancelFlightInfo(octx, &flight.CancelFlightInfoRequest{Info: info}); err != nil {
		p.log.Debug("cancel upstream query", "err", err)
	}
}
