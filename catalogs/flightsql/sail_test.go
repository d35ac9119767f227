package flightsql

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/flightgw/flightgw/catalogs"
)

// startSail runs Sail's Flight SQL server (PyPI pysail, its `sail`
// command in FLIGHTGW_SAIL) on a free loopback port.
func startSail(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("FLIGHTGW_SAIL")
	if bin == "" {
		t.Skip("FLIGHTGW_SAIL is not set: pip install pysail and point it at the sail command")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := lis.Addr().(*net.TCPAddr).Port
	lis.Close()
	cmd := exec.Command(bin, "flight", "server", "--ip", "127.0.0.1", "--port", strconv.Itoa(port), "-C", t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("sail did not listen")
	return ""
}

// TestSail: Sail has no GetSqlInfo, GetDbSchemas or GetTables and no
// parameters: its tables are probed, queries pushed whole, and its types
// (Utf8View strings, Int64 counts) cast to the planned ones.
func TestSail(t *testing.T) {
	addr := startSail(t)
	p, err := Open(context.Background(), "sail", map[string]string{propURI: "grpc://" + addr, propNamespace: "default", propQuote: "`", catalogs.PropRemoteTimeout: "30000"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	seed, err := p.query(ctx, "seed", func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, "CREATE TABLE people AS SELECT * FROM VALUES (1, 'ann', DATE '2024-01-02'), (2, 'bob', DATE '2024-03-04'), (3, 'cy', NULL) AS t(id, name, born)")
	})
	if err != nil {
		t.Fatal(err)
	}
	for seed.Next() {
	}
	seed.Release()
	tbl := catalogs.TableIdent{Catalog: "sail", Namespace: []string{"default"}, Name: "people"}
	spec, err := p.GetTableSpec(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probed schema: %s", spec.Schema)
	if spec.Schema.NumFields() != 3 || spec.Schema.Field(1).Type.ID() != arrow.STRING || spec.Schema.Field(2).Type.ID() != arrow.DATE32 {
		t.Fatalf("probed schema %s: want id, name as Utf8, born as Date32", spec.Schema)
	}
	if _, err := p.GetTableSpec(ctx, catalogs.TableIdent{Catalog: "sail", Namespace: []string{"default"}, Name: "nope"}); err == nil {
		t.Fatal("a missing table was found")
	} else {
		t.Logf("missing table: %v", err)
	}
	res, err := p.Scan(ctx, tbl, catalogs.ScanRequest{Columns: []string{"name"}, Filters: []catalogs.Filter{{Column: "id", Op: catalogs.OpGtEq, Values: []any{int64(2)}}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for res.Reader.Next() {
		col := res.Reader.RecordBatch().Column(0)
		for i := range col.Len() {
			names = append(names, col.ValueStr(i))
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatal(err)
	}
	res.Reader.Release()
	slices.Sort(names)
	if !slices.Equal(names, []string{"bob", "cy"}) {
		t.Fatalf("scan with a pushed filter: %q", names)
	}
	planned := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "m", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	r, err := p.PushQuery(ctx, catalogs.PushedQuery{Fragments: []string{"SELECT count(*) AS n, max(name) AS m FROM ", ""}, Tables: []catalogs.TableIdent{tbl}, Schema: planned})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() || r.RecordBatch().Column(0).ValueStr(0) != "3" || r.RecordBatch().Column(1).ValueStr(0) != "cy" || !r.Schema().Equal(planned) {
		t.Fatalf("pushed aggregate: %v %v", r.RecordBatch(), r.Err())
	}
	if _, err := p.OpenStream(ctx, tbl, catalogs.WriteTxn{ID: "w", AutoCommit: true}); err == nil || !strings.Contains(err.Error(), "bulk ingest") {
		t.Fatalf("a write to Sail: %v (want refused: no bulk ingest)", err)
	}
}
