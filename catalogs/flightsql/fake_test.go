package flightsql

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// fakeUpstream is a Flight SQL server whose every statement answers with
// the endpoints its test sets; a ticket's handle names the rows its
// stream sends (one int64 column "v", a batch per value). It records the
// authorization header of each DoGet.
type fakeUpstream struct {
	fsql.BaseServer
	endpoints func() []*flight.FlightEndpoint
	rows      map[string][]int64
	// before runs at the start of a ticket's DoGet (a test's barrier).
	before map[string]func(context.Context) error
	// afterInfo runs once a FlightInfo is answered.
	afterInfo func()

	// cancels receives the CancelFlightInfo requests, with their
	// authorization header.
	cancels chan cancelCall

	mu   sync.Mutex
	auth map[string][]string // ticket handle (or infoKey) -> authorization headers
}

// infoKey keys the authorization headers of the FlightInfo requests.
const infoKey = "(GetFlightInfo)"

var fakeSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

func newFake() *fakeUpstream {
	return &fakeUpstream{rows: map[string][]int64{}, before: map[string]func(context.Context) error{}, auth: map[string][]string{},
		cancels: make(chan cancelCall, 8)}
}

type cancelCall struct {
	req  *flight.CancelFlightInfoRequest
	auth []string
}

func (f *fakeUpstream) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.cancels <- cancelCall{req: req, auth: md.Get("authorization")}
	return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
}

// ticket is the endpoint of handle, served at the given locations (none:
// the upstream itself).
func ticket(t *testing.T, handle string, locs ...string) *flight.FlightEndpoint {
	t.Helper()
	tk, err := fsql.CreateStatementQueryTicket([]byte(handle))
	if err != nil {
		t.Fatal(err)
	}
	ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tk}}
	for _, l := range locs {
		ep.Location = append(ep.Location, &flight.Location{Uri: l})
	}
	return ep
}

func (f *fakeUpstream) GetFlightInfoStatement(ctx context.Context, _ fsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.auth[infoKey] = append(f.auth[infoKey], md.Get("authorization")...)
	f.mu.Unlock()
	if f.afterInfo != nil {
		defer f.afterInfo()
	}
	return &flight.FlightInfo{Schema: flight.SerializeSchema(fakeSchema, memory.DefaultAllocator), FlightDescriptor: desc,
		Endpoint: f.endpoints(), TotalRecords: -1, TotalBytes: -1}, nil
}

func (f *fakeUpstream) DoGetStatement(ctx context.Context, tk fsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	h := string(tk.GetStatementHandle())
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.auth[h] = append(f.auth[h], md.Get("authorization")...)
	before := f.before[h]
	f.mu.Unlock()
	if before != nil {
		if err := before(ctx); err != nil {
			return nil, nil, err
		}
	}
	ch := make(chan flight.StreamChunk)
	go func() {
		defer close(ch)
		for _, v := range f.rows[h] {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.Append(v)
			col := b.NewArray()
			b.Release()
			rec := array.NewRecordBatch(fakeSchema, []arrow.Array{col}, 1)
			col.Release()
			select {
			case ch <- flight.StreamChunk{Data: rec}:
			case <-ctx.Done():
				rec.Release()
				return
			}
		}
	}()
	return fakeSchema, ch, nil
}

func (f *fakeUpstream) authOf(handle string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth[handle]...)
}

func (f *fakeUpstream) resetAuth() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.auth)
}

// serveFake serves f on a loopback port until the test ends.
func serveFake(t *testing.T, f *fakeUpstream, mw []flight.ServerMiddleware, opts ...grpc.ServerOption) string {
	t.Helper()
	s := flight.NewServerWithMiddleware(mw, opts...)
	s.RegisterFlightService(fsql.NewFlightServer(f))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.InitListener(lis)
	go func() { _ = s.Serve() }()
	t.Cleanup(s.Shutdown)
	return lis.Addr().String()
}

// readAll reads a query of p against the fake upstream to its end.
func readAll(ctx context.Context, p *Provider) ([]int64, error) {
	r, err := p.query(ctx, "query", func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, "SELECT v FROM t")
	})
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var out []int64
	for r.Next() {
		col := r.RecordBatch().Column(0).(*array.Int64)
		for i := range col.Len() {
			out = append(out, col.Value(i))
		}
	}
	return out, r.Err()
}
