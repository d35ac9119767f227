package iceberg_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// TestOpenErrorsNameTheURI: a catalog that cannot be opened is named by
// its URI, its password masked.
func TestOpenErrorsNameTheURI(t *testing.T) {
	wh := "file://" + t.TempDir()
	for uri, want := range map[string]string{
		"sqlite:///nonexistent/dir/catalog.db": "sqlite:///nonexistent/dir/catalog.db",
		"postgres://bob:s3cret@127.0.0.1:1/db": "postgres://bob:xxxxx@127.0.0.1:1/db",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := iceberg.Open(ctx, "lake", map[string]string{"catalog-type": "sql", iceberg.PropURI: uri, "warehouse": wh})
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("open %s: %v; want it to name %s and no password", uri, err, want)
		}
	}
}
