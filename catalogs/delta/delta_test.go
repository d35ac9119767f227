package delta_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// openLocal opens a catalog "lake" on a fresh local warehouse with the
// namespace "default"; kv are more properties, key then value.
func openLocal(t testing.TB, wh string, kv ...string) *delta.Provider {
	t.Helper()
	if wh == "" {
		wh = t.TempDir()
	}
	props := map[string]string{delta.PropWarehouse: wh,
		delta.PropCreateNamespaces: "default", lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20", lake.PropCommitRetries: "1000"}
	for i := 0; i+1 < len(kv); i += 2 {
		props[kv[i]] = kv[i+1]
	}
	p, err := delta.Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint is written after its commit is answered: Close waits
	// for it, before the warehouse (a TempDir made earlier, so removed
	// later) goes.
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func listDir(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.Contains(p, "_delta_log") && !strings.HasSuffix(p, ".flightgw-namespace") {
			out = append(out, strings.TrimPrefix(p, root))
		}
		return nil
	})
	return out, err
}

// TestConformanceLocal: the backend stages Parquet files, commits by
// compare-and-swap (put-if-absent of the next log version), writes one
// file per stream, and cannot store month intervals. 32 committers: a
// Delta commit is one small put-if-absent after a replay, a window 8
// committers on a loaded machine often all miss (the suite wants a
// conflict retried).
func TestConformanceLocal(t *testing.T) {
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		wh := t.TempDir()
		p := openLocal(t, wh)
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
			Replica:   func(t *testing.T) catalogs.Provider { return openLocal(t, wh) },
		}
	}, Committers: 32}, catalogtest.Config{StagesFiles: true, CompareAndSwap: true, GroupsCommits: true,
		Layout: catalogtest.LayoutOneFilePerBucket, UnstorableType: arrow.FixedWidthTypes.MonthInterval})
}

// TestConformanceLocalNoGroup runs the suite with group commit off:
// every commit is its own put-if-absent loop, as between gateways, so
// that 32 committers must lose races and retry.
func TestConformanceLocalNoGroup(t *testing.T) {
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		wh := t.TempDir()
		p := openLocal(t, wh, delta.PropCommitGroupEnabled, "false")
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
		}
	}, Committers: 32}, catalogtest.Config{StagesFiles: true, CompareAndSwap: true,
		Layout: catalogtest.LayoutOneFilePerBucket, UnstorableType: arrow.FixedWidthTypes.MonthInterval})
}

func TestRegistered(t *testing.T) {
	p, err := catalogs.Open(context.Background(), delta.Type, "lake", map[string]string{delta.PropWarehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*delta.Provider); !ok {
		t.Fatalf("catalogs.Open(%q) = %T", delta.Type, p)
	}
}
