package flightsql

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"

	"github.com/flightgw/flightgw/catalogs"
)

// TestSchemaTTL: a table's spec is read from the upstream once per
// schema_ttl, not at every look-up (a query makes several); schema_ttl 0
// reads it every time.
func TestSchemaTTL(t *testing.T) {
	var infos atomic.Int64
	count := flight.ServerMiddleware{Unary: func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if strings.HasSuffix(info.FullMethod, "/GetFlightInfo") {
			infos.Add(1)
		}
		return h(ctx, req)
	}}
	addr := startSQLiteWith(t, []flight.ServerMiddleware{count})
	tbl := catalogs.TableIdent{Catalog: "lite", Namespace: []string{"main"}, Name: "intTable"}
	for _, tc := range []struct {
		ttl   string
		reads int64 // upstream GetFlightInfo calls of 3 look-ups after the first
	}{{"", 0}, {"10s", 0}, {"0s", 3}} {
		p, err := Open(context.Background(), "lite", map[string]string{propURI: "grpc://" + addr, propNamespace: "main",
			propSchemaTTL: tc.ttl, catalogs.PropRemoteTimeout: "5000"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.GetTableSpec(context.Background(), tbl); err != nil {
			t.Fatal(err)
		}
		before := infos.Load()
		for range 3 {
			if spec, err := p.GetTableSpec(context.Background(), tbl); err != nil || spec.Schema.NumFields() != 4 {
				t.Fatalf("schema_ttl %q: %v %v", tc.ttl, spec.Schema, err)
			}
		}
		_ = p.Close()
		if n := infos.Load() - before; n != tc.reads {
			t.Fatalf("schema_ttl %q: 3 look-ups made %d upstream calls, want %d", tc.ttl, n, tc.reads)
		}
	}
}
