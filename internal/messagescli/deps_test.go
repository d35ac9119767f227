package messagescli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoGateway: the command links neither the backends nor the
// engine, whose package initialisers (iceberg-go's substrait function
// catalogue above all) would run before the light front's main
// (cmd/flightgw's TestLinksNoGateway checks the whole front).
func TestLinksNoGateway(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/flightgw/flightgw/internal/messagescli").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/apache/iceberg-go", "github.com/duckdb/", "github.com/flightgw/flightgw/catalogs",
			"github.com/flightgw/flightgw/engine", "github.com/flightgw/flightgw/server", "google.golang.org/grpc"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("messagescli links %s", dep)
			}
		}
	}
}
