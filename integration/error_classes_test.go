package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/engine"
)

// TestClientGoneIsCanceled: a client that cancels a query's DoGet after
// its first batch, or stops reading it (releases its reader), was logged
// at WARN as code=Unknown with no text, and counted as Unknown in
// flightgw_rpcs_total: a server error on a dashboard for what the client
// chose. Each is Canceled, logged at INFO with its text, and counted so.
func TestClientGoneIsCanceled(t *testing.T) {
	requireEngine(t)
	g, health := runGateway(t)
	c := g.flightClient(t)
	const q = `SELECT i FROM range(1000000000) t(i)`
	for _, tc := range []struct {
		name string
		stop func(cancel context.CancelFunc, release func())
	}{
		{"cancel after the first batch", func(cancel context.CancelFunc, release func()) { cancel(); release() }},
		{"stop reading: release the reader", func(cancel context.CancelFunc, release func()) {
			release()
			time.Sleep(50 * time.Millisecond)
			cancel()
		}},
		{"cancel, then read on", func(cancel context.CancelFunc, release func()) {
			cancel()
			time.Sleep(50 * time.Millisecond)
			release()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := value(scrape(t, health), "flightgw_rpcs_total", "method=DoGet", "code=Canceled")
			mark := len(g.logs.String())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			info, err := c.Execute(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				t.Fatal(err)
			}
			if !rdr.Next() {
				t.Fatalf("no first batch: %v", rdr.Err())
			}
			tc.stop(cancel, rdr.Release)
			var line string
			if !eventually(t, 10*time.Second, func() bool {
				for _, l := range strings.Split(g.logs.String()[mark:], "\n") {
					if strings.Contains(l, "msg=call") && strings.Contains(l, "/DoGet") {
						line = l
						return true
					}
				}
				return false
			}) {
				t.Fatalf("no call line for the DoGet:\n%s", g.logs.String()[mark:])
			}
			if !strings.Contains(line, "level=INFO") || !strings.Contains(line, "code=Canceled") || !strings.Contains(line, "err=") {
				t.Errorf("call line %q, want level=INFO code=Canceled with the error's text", line)
			}
			fams := scrape(t, health)
			if after, _ := value(fams, "flightgw_rpcs_total", "method=DoGet", "code=Canceled"); after != before+1 {
				t.Errorf("flightgw_rpcs_total{DoGet,Canceled} went %v -> %v, want one more", before, after)
			}
			if v, ok := value(fams, "flightgw_rpcs_total", "method=DoGet", "code=Unknown"); ok {
				t.Errorf("flightgw_rpcs_total{DoGet,Unknown} = %v", v)
			}
		})
	}
}

// TestStorageRefusalsAreInvalidArgument: a partition value the storage
// cannot hold as a directory name failed as Unavailable (ENAMETOOLONG),
// which a client retries forever. It is InvalidArgument naming the
// partition column and the limit, for every value that makes a name over
// 255 bytes as stored (long, escaped, multi-byte), and a write within the
// limit still lands.
func TestStorageRefusalsAreInvalidArgument(t *testing.T) {
	g := startGateway(t, `
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`)
	c := g.flightClient(t)
	ctx := context.Background()
	create := modeCreate("parts")
	create.Catalog = ptr("pm")
	create.Options = map[string]string{"partition": "name"}
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 2)), create); err != nil {
		t.Fatal(err)
	}
	named := func(name string) arrow.RecordBatch {
		return batchFromJSON(t, peopleSchema, func(int) string { return fmt.Sprintf(`{"id": 7, "name": %q, "score": 1}`, name) }, 1)
	}
	for _, tc := range []struct {
		name  string
		value string
		code  codes.Code
	}{
		{"300 bytes", strings.Repeat("x", 300), codes.InvalidArgument},
		{"4 KiB", strings.Repeat("y", 4096), codes.InvalidArgument},
		{"under the limit as written, over it escaped", strings.Repeat("%", 90), codes.InvalidArgument},
		{"multi-byte characters", strings.Repeat("ü", 130), codes.InvalidArgument},
		{"at the limit", strings.Repeat("z", 250), codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := modeAppend("parts")
			o.Catalog = ptr("pm")
			_, err := c.ExecuteIngest(ctx, reader(t, named(tc.value)), o)
			if tc.code == codes.OK {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			assertStatus(t, err, tc.code, "partition column name")
			assertStatus(t, err, tc.code, "limit of 255 bytes")
		})
	}
	if engine.Built {
		if got := queryOne(t, g, `SELECT count(*) FROM pm.default.parts`); got != "3" {
			t.Errorf("rows = %s, want the 2 created and the 1 within the limit", got)
		}
	}
}
