package flightsql

import (
	"context"
	"errors"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/flightframe"
)

// endpointBuffer is how many decoded batches an endpoint read ahead of
// the reader holds: with parallel_endpoints streams open, at most
// parallel_endpoints × (endpointBuffer + 1) batches are in memory.
const endpointBuffer = 2

// query gets a FlightInfo (an idempotent call: it only plans) and reads
// its endpoints, up to parallel_endpoints of them at once, handing their
// batches on in endpoint order: streaming, a few batches held per open
// stream. The reader's Release cancels what is still being read,
// upstream too (CancelFlightInfo, when the upstream supports it).
func (p *Provider) query(ctx context.Context, what string, get func(context.Context) (*flight.FlightInfo, error)) (*infoReader, error) {
	return p.read(ctx, what, get, false)
}

// read is query, with relay for a result the gateway sends on
// (PushQuery under catalogs.WithRelay): its record batches are then
// flightframe.Batches, their messages kept as received, decoded only if
// something reads their columns.
func (p *Provider) read(ctx context.Context, what string, get func(context.Context) (*flight.FlightInfo, error), relay bool) (*infoReader, error) {
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
	r := &infoReader{p: p, what: what, ctx: rctx, cancel: cancel, info: info, conns: conns, schema: schema,
		reads: make([]*endpointRead, len(info.Endpoint)), parallel: p.cfg.parallel, relay: relay}
	r.refs.Store(1)
	r.startUpTo(r.parallel)
	if len(info.Endpoint) == 0 {
		r.done = true
	}
	if r.schema == nil {
		// No schema in the FlightInfo: the first stream's is the result's.
		err := catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: %s: the result has no schema", p.name, p.cfg.addr, what)
		if len(info.Endpoint) > 0 {
			e := r.reads[0]
			<-e.ready
			// e.err is read only when the open failed: it was set before
			// ready was closed and is never written again. An open stream
			// may set it later (a bad batch, the end), for Next to read
			// once e.batches is closed.
			if r.schema = e.schema; r.schema == nil && e.err != nil {
				err = e.err
			}
		}
		if r.schema == nil {
			r.Release()
			return nil, err
		}
	}
	return r, nil
}

// endpointConn is the connection an endpoint is read from: the main one
// for an endpoint without a location (or one that says to reuse the
// connection, or names the upstream itself), else one to the location,
// which must be on the allowlist.
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

// endpointRead is one endpoint's stream, read by a goroutine of its own
// into batches (closed at its end, after err is set).
type endpointRead struct {
	ready   chan struct{} // closed once the stream is open (schema set) or failed (err set)
	schema  *arrow.Schema
	batches chan arrow.RecordBatch
	err     error
}

// infoReader is an array.RecordReader over the endpoints of a FlightInfo.
type infoReader struct {
	p        *Provider
	what     string
	ctx      context.Context
	cancel   context.CancelFunc
	info     *flight.FlightInfo
	conns    []*conn
	schema   *arrow.Schema
	parallel int
	relay    bool            // batches as flightframe.Batches (read)
	reads    []*endpointRead // started reads; nil until started
	wg       sync.WaitGroup  // the reads' goroutines
	next     int             // the endpoint whose batches are handed on now
	rec      arrow.RecordBatch
	err      error
	done     bool
	refs     atomic.Int64
}

var _ array.RecordReader = (*infoReader)(nil)

// startUpTo starts the reads of the endpoints before n not yet started.
func (r *infoReader) startUpTo(n int) {
	for i := r.next; i < n && i < len(r.reads); i++ {
		if r.reads[i] != nil {
			continue
		}
		e := &endpointRead{ready: make(chan struct{}), batches: make(chan arrow.RecordBatch, endpointBuffer)}
		r.reads[i] = e
		r.wg.Add(1)
		go r.read(r.info.Endpoint[i], r.conns[i], e)
	}
}

// read streams one endpoint into e.batches until its end, an error or
// the reader's release.
func (r *infoReader) read(ep *flight.FlightEndpoint, c *conn, e *endpointRead) {
	defer r.wg.Done()
	defer close(e.batches)
	st, err := r.openStream(c, ep)
	if err != nil {
		e.err = r.failed(c, err)
		close(e.ready)
		return
	}
	defer st.release()
	e.schema = st.rd.Schema()
	close(e.ready)
	for {
		rec, err := st.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				e.err = r.failed(c, err)
			}
			return
		}
		select {
		case e.batches <- rec:
		case <-r.ctx.Done():
			rec.Release()
			e.err = r.ctx.Err()
			return
		}
	}
}

// openStream sends the DoGet of an endpoint and reads its schema. A
// token the upstream refuses as Unauthenticated before the first batch
// (it expired since the FlightInfo) is handshaken again and the DoGet
// repeated once: nothing was read.
func (r *infoReader) openStream(c *conn, ep *flight.FlightEndpoint) (*relayStream, error) {
	_, fwd := forwarded(r.ctx)
	for attempt := 0; ; attempt++ {
		var tok catalogs.Secret
		if !fwd {
			var err error
			if tok, err = c.bearer(r.ctx); err != nil {
				return nil, err
			}
		}
		octx, err := c.outgoing(r.ctx)
		if err != nil {
			return nil, err
		}
		s, err := c.client.Client.DoGet(octx, ep.GetTicket())
		if err == nil {
			var st *relayStream
			if st, err = newRelayStream(s, r.relay); err == nil {
				return st, nil
			}
		}
		if status.Code(err) == codes.Unauthenticated && c.cfg.user != "" && !fwd && attempt == 0 {
			c.forget(tok)
			continue
		}
		return nil, err
	}
}

// relayStream reads one DoGet's messages as the connection's codec
// receives them (flightframe.Frame): when relaying, a record batch of a
// stream whose column types flightframe.Layout describes (no
// dictionaries, views, unions) becomes a flightframe.Batch, which the
// gateway's DoGet sends on as the very bytes received when its columns
// are what the client is to get (no decode, no copy, no re-encode);
// every other message goes through the IPC reader, which decodes it.
// Every record batch of such a stream, relayed or decoded, is first
// checked against its header and the schema (Layout.Check): a batch
// whose buffers are shorter than its header says is the read's error,
// not arrays that read past their memory here, in DuckDB or in the
// client.
type relayStream struct {
	s   grpc.ClientStream
	src *frameSource
	rd  *flight.Reader
	// stream is the upstream's schema message, set when the batches are
	// relayed.
	stream *flightframe.Stream
}

func newRelayStream(s grpc.ClientStream, relay bool) (*relayStream, error) {
	first := new(flightframe.Frame)
	if err := s.RecvMsg(first); err != nil {
		return nil, err
	}
	var schemaMsg *flight.FlightData
	if relay && first.Kind() == flightframe.KindSchema {
		fd, err := first.Decoded()
		if err != nil {
			first.Release()
			return nil, err
		}
		schemaMsg = fd
	}
	src := &frameSource{s: s, pending: first}
	rd, err := flight.NewRecordReader(src)
	if err != nil {
		return nil, err
	}
	st := &relayStream{s: s, src: src, rd: rd}
	if src.layout = flightframe.NewLayout(rd.Schema()); src.layout != nil && schemaMsg != nil {
		st.stream = flightframe.NewStream(schemaMsg, nil)
	}
	return st, nil
}

// next is the stream's next batch, or io.EOF at its end.
func (st *relayStream) next() (arrow.RecordBatch, error) {
	if st.stream != nil {
		f := new(flightframe.Frame)
		if err := st.s.RecvMsg(f); err != nil {
			return nil, err
		}
		if f.Kind() == flightframe.KindRecordBatch {
			if err := st.src.layout.Check(f); err != nil {
				f.Release()
				return nil, badBatch{err}
			}
			return flightframe.NewBatch(f, st.stream, st.rd.Schema()), nil
		}
		st.src.pending = f
	}
	if !st.rd.Next() {
		if err := st.rd.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	rec := st.rd.RecordBatch()
	rec.Retain()
	return rec, nil
}

func (st *relayStream) release() {
	st.rd.Release()
	if st.src.pending != nil {
		st.src.pending.Release()
		st.src.pending = nil
	}
}

// frameSource feeds the IPC reader: the message the relay set aside,
// else the stream's next, decoded; a record batch is checked first
// when the stream's layout is known.
type frameSource struct {
	s       grpc.ClientStream
	pending *flightframe.Frame
	layout  *flightframe.Layout
}

func (f *frameSource) Recv() (*flight.FlightData, error) {
	fr := f.pending
	f.pending = nil
	if fr == nil {
		fr = new(flightframe.Frame)
		if err := f.s.RecvMsg(fr); err != nil {
			return nil, err
		}
	}
	defer fr.Release()
	if f.layout != nil && fr.Kind() == flightframe.KindRecordBatch {
		if err := f.layout.Check(fr); err != nil {
			return nil, badBatch{err}
		}
	}
	return fr.Decoded()
}

// badBatch is a record batch the upstream sent that does not hold what
// its header says (flightframe.Layout.Check).
type badBatch struct{ err error }

func (b badBatch) Error() string { return b.err.Error() }
func (b badBatch) Unwrap() error { return b.err }

// failed counts a stream's failure against the breaker and names it.
func (r *infoReader) failed(c *conn, err error) error {
	if bad := (badBatch{}); errors.As(err, &bad) {
		// The upstream answered, wrongly: not an outage for the breaker.
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: %s: the upstream sent a malformed record batch: %v", r.p.name, c.addr, r.what, bad.err)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	c.remote.Record(err)
	_, fwd := forwarded(r.ctx)
	return c.classifyAs(err, r.what, fwd || c.caller)
}

func (r *infoReader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	for !r.done {
		e := r.reads[r.next]
		if rec, ok := <-e.batches; ok {
			r.rec = rec
			return true
		}
		if e.err != nil {
			r.err, r.done = e.err, true
			return false
		}
		r.next++
		r.startUpTo(r.next + r.parallel)
		r.done = r.next >= len(r.reads)
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
// streams, waits for their goroutines, and asks the upstream to cancel
// the query.
func (r *infoReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	early := !r.done
	r.cancel()
	r.wg.Wait()
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	for _, e := range r.reads {
		if e == nil {
			continue
		}
		for rec := range e.batches {
			rec.Release()
		}
	}
	if early && r.p.canCancel.Load() {
		// Without the read's cancellation, with its values: a forwarded
		// caller's token cancels the caller's query.
		r.p.goCancel(context.WithoutCancel(r.ctx), r.info)
	}
}

// goCancel asks the upstream, in the background, to cancel the query of
// info, unless the provider is closing.
func (p *Provider) goCancel(ctx context.Context, info *flight.FlightInfo) {
	p.cancelMu.Lock()
	defer p.cancelMu.Unlock()
	if p.closed {
		return
	}
	p.cancels.Go(func() { p.cancelInfo(ctx, info) })
}

// cancelInfo asks the upstream to stop a query nobody reads any more.
func (p *Provider) cancelInfo(ctx context.Context, info *flight.FlightInfo) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	octx, err := p.main.outgoing(ctx)
	if err != nil {
		return
	}
	if _, err := p.main.client.CancelFlightInfo(octx, &flight.CancelFlightInfoRequest{Info: info}); err != nil {
		p.log.Debug("cancel upstream query", "err", err)
	}
}
