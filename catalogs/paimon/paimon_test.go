package paimon_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// conformance is what the Paimon backend declares: it stages Parquet
// files, commits by compare-and-swap (put-if-absent of snapshot-N), has
// field ids and snapshots, writes one file per bucket, and cannot store
// month intervals.
func conformance() catalogtest.Config {
	return catalogtest.Config{
		StagesFiles: true, CompareAndSwap: true, FieldIDs: true, Snapshots: true,
		Layout:         catalogtest.LayoutOneFilePerBucket,
		UnstorableType: arrow.FixedWidthTypes.MonthInterval,
	}
}

// openLocal opens a catalog "lake" on a fresh local warehouse with the
// database "default".
func openLocal(t *testing.T, extra map[string]string) (*paimon.Provider, string) {
	t.Helper()
	wh := t.TempDir()
	props := map[string]string{paimon.PropWarehouse: wh, paimon.PropCreateNamespaces: "default",
		paimon.PropCommitMinWait: "1", paimon.PropCommitMaxWait: "20"}
	for k, v := range extra {
		props[k] = v
	}
	p, err := paimon.Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	return p, wh
}

func listDir(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, root))
		}
		return nil
	})
	return out, err
}

func TestConformanceLocal(t *testing.T) {
	catalogtest.Run(t, catalogtest.Harness{New: func(t *testing.T) *catalogtest.Instance {
		p, wh := openLocal(t, nil)
		return &catalogtest.Instance{
			Provider: p, Catalog: "lake", Namespace: []string{"default"},
			ListFiles: func(context.Context) ([]string, error) { return listDir(wh) },
		}
	}}, conformance())
}

func TestRegistered(t *testing.T) {
	p, err := catalogs.Open(context.Background(), paimon.Type, "lake", map[string]string{paimon.PropWarehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*paimon.Provider); !ok {
		t.Fatalf("catalogs.Open(%q) = %T", paimon.Type, p)
	}
}
