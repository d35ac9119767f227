package flightsql

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/flightframe"
)

// TestRelay: a result read to be relayed hands on the upstream's record
// batches as received (flightframe.Batch, sent on by the gateway's
// DoGet), typed as planned when the column types are the planned ones,
// and decoded and cast when they are not; a result read otherwise hands
// on decoded batches. Every way reads the same values, over endpoints
// in order.
func TestRelay(t *testing.T) {
	f := newFake()
	f.rows["a"], f.rows["b"] = []int64{1, 2}, []int64{3}
	main := serveFake(t, f, nil)
	f.endpoints = func() []*flight.FlightEndpoint { return []*flight.FlightEndpoint{ticket(t, "a"), ticket(t, "b")} }
	p, err := Open(context.Background(), "up", map[string]string{propURI: "grpc://" + main, catalogs.PropRemoteTimeout: "5000"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	planned := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	widened := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Float64}}, nil)
	for _, c := range []struct {
		name    string
		relay   bool
		planned *arrow.Schema
		relayed bool
	}{
		{"relayed", true, planned, true},
		{"relayed, cast", true, widened, false},
		{"not relayed", false, planned, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := p.read(context.Background(), "query", func(ctx context.Context) (*flight.FlightInfo, error) {
				return p.main.client.Execute(ctx, "SELECT v FROM t")
			}, c.relay)
			if err != nil {
				t.Fatal(err)
			}
			cr, err := castTo(r, c.planned, "query")
			if err != nil {
				t.Fatal(err)
			}
			defer cr.Release()
			var got []float64
			for cr.Next() {
				b := cr.RecordBatch()
				if _, ok := b.(*flightframe.Batch); ok != c.relayed {
					t.Fatalf("a batch relayed as received: %v, want %v", ok, c.relayed)
				}
				if !b.Schema().Equal(c.planned) {
					t.Fatalf("batch schema %s, want the planned %s", b.Schema(), c.planned)
				}
				switch col := b.Column(0).(type) {
				case *array.Int64:
					for i := range col.Len() {
						got = append(got, float64(col.Value(i)))
					}
				case *array.Float64:
					got = append(got, col.Float64Values()...)
				}
			}
			if err := cr.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
				t.Fatalf("read %v, want [1 2 3]", got)
			}
		})
	}
}
