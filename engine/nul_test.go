//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// TestQueryNUL: DuckDB's parser stops at a NUL byte, and a query a
// backend runs whole is sent as the client wrote it: "SELECT id FROM
// sales\x00 UNION ..." reached StarRocks with its tail, checked by no one.
// A query holding a NUL is refused, InvalidArgument naming the offset,
// and nothing is pushed.
func TestQueryNUL(t *testing.T) {
	f := newFixture(t)
	ps := &pushScanner{memScanner: f.scan}
	resolve := func(cat, sch, name string) (Table, error) {
		tb, err := f.resolve(cat, sch, name)
		tb.Scanner = ps
		return tb, err
	}
	for _, q := range []string{"SELECT id FROM sales\x00 UNION ALL SELECT 7 FROM elsewhere", "SELECT id FROM sales WHERE region = 'eu\x00'"} {
		ps.pushed = nil
		r, err := f.eng.Query(context.Background(), q, nil, resolve)
		if err == nil {
			for r.Next() {
			}
			r.Close()
		}
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "NUL byte at offset") {
			t.Errorf("%q: %v, want InvalidArgument naming the NUL", q, err)
		}
		if len(ps.pushed) > 0 {
			t.Errorf("%q: pushed %q", q, ps.pushed)
		}
	}
}
