package integration

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
)

// recordingSQLite is arrow-go's SQLite example Flight SQL server that
// records the statements it is asked to run and counts the rows its
// DoGets hand to the network.
type recordingSQLite struct {
	*example.SQLiteFlightSQLServer
	sent    atomic.Int64
	mu      sync.Mutex
	queries []string
}

func (s *recordingSQLite) GetFlightInfoStatement(ctx context.Context, cmd fsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	s.mu.Lock()
	s.queries = append(s.queries, cmd.GetQuery())
	s.mu.Unlock()
	return s.SQLiteFlightSQLServer.GetFlightInfoStatement(ctx, cmd, desc)
}

func (s *recordingSQLite) DoGetStatement(ctx context.Context, tk fsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	schema, in, err := s.SQLiteFlightSQLServer.DoGetStatement(ctx, tk)
	if err != nil {
		return nil, nil, err
	}
	out := make(chan flight.StreamChunk)
	go func() {
		defer close(out)
		for c := range in { // to its end: the example's goroutine does not watch ctx
			select {
			case out <- c:
				if c.Data != nil {
					s.sent.Add(c.Data.NumRows())
				}
				continue
			case <-ctx.Done():
			}
			if c.Data != nil {
				c.Data.Release()
			}
		}
	}()
	return schema, out, nil
}

// reset forgets the statements and rows so far.
func (s *recordingSQLite) reset() {
	s.mu.Lock()
	s.queries = nil
	s.mu.Unlock()
	s.sent.Store(0)
}

// received is the statements other than schema probes.
func (s *recordingSQLite) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.queries), func(q string) bool { return strings.HasSuffix(q, "WHERE 1=0") })
}

// TestUpstreamLimit: a LIMIT over one upstream table reaches the
// upstream, whether the query goes to it whole or the engine scans the
// table, so that it sends the rows asked for and not the whole table; a
// LIMIT the scan cannot honour (under an ORDER BY) is not pushed.
func TestUpstreamLimit(t *testing.T) {
	requireEngine(t)
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const total = 100000
	mustExec(t, db, `CREATE TABLE big (v INTEGER)`)
	mustExec(t, db, fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) INSERT INTO big SELECT x FROM c`, total))
	inner, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	up := &recordingSQLite{SQLiteFlightSQLServer: inner}
	gw := startLiteGateway(t, fsql.NewFlightServer(up))
	cnxn := gw.adbcConn(t, nil)
	for _, c := range []struct {
		name, q string
		want    []string // rows, when they are known
		rows    int
		limit   string // in the statement the upstream receives; "" for none
	}{
		// The cast is not in the portable SQL: the engine scans.
		{"scanned", `SELECT v::VARCHAR FROM lite.main.big LIMIT 10`, nil, 10, " LIMIT 10"},
		{"scanned with a filter and an offset", `SELECT v::VARCHAR FROM lite.main.big WHERE v > 99990 LIMIT 5 OFFSET 2`, nil, 5, " LIMIT 7"},
		{"pushed whole", `SELECT * FROM lite.main.big LIMIT 10`, nil, 10, " LIMIT 10"},
		{"under an ORDER BY", `SELECT v::VARCHAR FROM lite.main.big ORDER BY v DESC LIMIT 3`, []string{"100000", "99999", "99998"}, 3, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			up.reset()
			got := mustRows(t, cnxn, c.q, nil)
			if len(got) != c.rows || c.want != nil && !slices.Equal(got, c.want) {
				t.Fatalf("rows %q, want %d %q", got, c.rows, c.want)
			}
			qs := up.received()
			if len(qs) != 1 {
				t.Fatalf("upstream statements %q, want one", qs)
			}
			if c.limit == "" {
				if strings.Contains(qs[0], "LIMIT") || up.sent.Load() != total {
					t.Fatalf("upstream statement %q sent %d rows, want no LIMIT and all %d", qs[0], up.sent.Load(), total)
				}
				return
			}
			if !strings.HasSuffix(qs[0], c.limit) {
				t.Fatalf("upstream statement %q, want it to end with %q", qs[0], c.limit)
			}
			if n := up.sent.Load(); n > int64(c.rows)+2 {
				t.Fatalf("the upstream sent %d rows for %d", n, c.rows)
			}
		})
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// startLiteGateway serves svc (arrow-go's SQLite example server, or one
// wrapping it) on a loopback port until the test ends, and starts a
// gateway whose catalog lite federates it (namespace main).
func startLiteGateway(t *testing.T, svc flight.FlightServer) *gateway {
	t.Helper()
	s := flight.NewServerWithMiddleware(nil)
	s.RegisterFlightService(svc)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.InitListener(lis)
	go func() { _ = s.Serve() }()
	t.Cleanup(s.Shutdown)
	return startGateway(t, fmt.Sprintf(`catalogs:
  - name: lite
    type: flightsql
    properties: {uri: "grpc://%s", namespace: main, timeout: 10s}
`, lis.Addr()))
}
