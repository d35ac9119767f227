//go:build !duckdb_arrow

package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"google.golang.org/grpc/codes"
)

// TestNoEngine: a gateway built without the engine's build tag (a plain
// `go build`) says so in one line at start, refuses SQL with Unimplemented
// naming the tag, and serves everything else. It exists only in that
// build; make runs it with the tag unset (Makefile, test-go).
func TestNoEngine(t *testing.T) {
	g := startGateway(t, "")
	var lines []string
	for _, l := range strings.Split(g.logs.String(), "\n") {
		if strings.Contains(strings.ToLower(l), "sql engine") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "not built into this binary") || !strings.Contains(lines[0], "build_tag=duckdb_arrow") {
		t.Fatalf("want one start line saying the engine is not built and naming its tag, got %q", lines)
	}

	if n, err := ingest(t, g.adbcConn(t, nil), "people", adbc.OptionValueIngestModeCreate, people(t, 0, 10)); err != nil || n != 10 {
		t.Fatalf("ingest without the engine: %d rows, %v", n, err)
	}
	c := g.flightClient(t)
	ctx := context.Background()
	_, err := c.Execute(ctx, "SELECT count(*) FROM people")
	assertStatus(t, err, codes.Unimplemented, "build tag duckdb_arrow")
	_, err = c.ExecuteUpdate(ctx, "INSERT INTO people SELECT * FROM people")
	assertStatus(t, err, codes.Unimplemented, "build tag duckdb_arrow")
	_, err = c.Prepare(ctx, "SELECT 1")
	assertStatus(t, err, codes.Unimplemented, "build tag duckdb_arrow")
}
