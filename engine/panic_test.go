//go:build duckdb_arrow

package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
)

// panickingReader panics on its second batch, as arrow-go's kernels did
// inside a backend's merge on read (issue 19).
type panickingReader struct {
	array.RecordReader
	n int
}

func (r *panickingReader) Next() bool {
	if r.n++; r.n > 1 {
		var s []byte
		_ = s[:r.n] // slice bounds out of range
	}
	return r.RecordReader.Next()
}

type panickingScanner struct{ inner *memScanner }

func (s panickingScanner) Scan(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	res, err := s.inner.Scan(ctx, t, req)
	if err != nil {
		return nil, err
	}
	res.Reader = &panickingReader{RecordReader: res.Reader}
	return res, nil
}

// TestScanPanicIsTheQuerysError: a backend reader that panics on the
// engine's prefetch goroutine fails that query with an error naming a
// recovered panic; the process, and the next query, go on.
func TestScanPanicIsTheQuerysError(t *testing.T) {
	f := newFixture(t)
	big := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rows := make([]string, 1000)
	for i := range rows {
		rows[i] = `{"id":1}`
	}
	mem := &memScanner{tables: map[string]arrow.RecordBatch{"big": batch(t, big, "["+strings.Join(rows, ",")+"]")}}
	resolve := func(cat, sch, name string) (Table, error) {
		if name != "big" {
			return f.resolve(cat, sch, name)
		}
		return Table{Ident: catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: name},
			Schema: big, Scanner: panickingScanner{mem}}, nil
	}
	r, err := f.eng.Query(context.Background(), `SELECT count(*) FROM big`, nil, resolve)
	if err == nil {
		for r.Next() {
		}
		err = r.Err()
		r.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "internal error in table scan") {
		t.Fatalf("query over a panicking scan: %v, want the recovered panic", err)
	}
	r, err = f.eng.Query(context.Background(), `SELECT count(*) FROM sales`, nil, f.resolve)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
}
