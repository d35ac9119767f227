package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoGateway: the front links none of the gateway. Every package
// a Go binary links runs its initialisers before main; iceberg-go's
// substrait function catalogue alone made `flightgw messages inspect`
// take 60-130 ms and 60-90 MB. A heavy import added to the front (or to
// internal/cli, messagescli, the codec) fails here; it belongs in
// cmd/flightgw-server.
func TestLinksNoGateway(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	// GOFLAGS (-tags=duckdb_arrow under make) is inherited: the closure is
	// the one make builds.
	out, err := exec.Command(goTool, "list", "-deps", "github.com/flightgw/flightgw/cmd/flightgw").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	banned := []string{
		"github.com/apache/iceberg-go", "github.com/substrait-io/", "github.com/duckdb/",
		"github.com/apache/arrow-go/v18/arrow/compute", "github.com/apache/arrow-go/v18/arrow/flight",
		"github.com/apache/arrow-go/v18/parquet", "google.golang.org/grpc", "google.golang.org/protobuf",
		"github.com/flightgw/flightgw/server", "github.com/flightgw/flightgw/handlers",
		"github.com/flightgw/flightgw/engine", "github.com/flightgw/flightgw/catalogs",
		"github.com/flightgw/flightgw/txn", "github.com/flightgw/flightgw/client",
	}
	for _, dep := range deps {
		for _, b := range banned {
			if dep == b || strings.HasPrefix(dep, strings.TrimSuffix(b, "/")+"/") {
				t.Errorf("cmd/flightgw links %s (heavy, or part of the gateway: cmd/flightgw-server's)", dep)
			}
		}
		if dep == "github.com/flightgw/flightgw/auth" {
			t.Errorf("cmd/flightgw links package auth, which links gRPC; the hash commands use auth/secret")
		}
	}
	// The list is the front's: it holds what the front runs itself.
	if !strings.Contains(string(out), "github.com/flightgw/flightgw/internal/messagescli\n") {
		t.Fatalf("go list -deps cmd/flightgw does not list internal/messagescli:\n%s", out)
	}
}
