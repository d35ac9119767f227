package handlers

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNamesNoBackend: handlers and codec/envelope name no backend, so that
// a new table format adds no case to either (its payload kind and
// serializer versions are its catalogs.PayloadCodec's, its table options
// its catalogs.TableManager's).
func TestNamesNoBackend(t *testing.T) {
	backend := regexp.MustCompile(`(?i)iceberg|paimon|delta lake|starrocks`)
	for _, dir := range []string{".", "../codec/envelope"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if m := backend.FindString(line); m != "" {
					t.Errorf("%s:%d names the backend %q: %s", f, i+1, m, strings.TrimSpace(line))
				}
			}
		}
	}
}
