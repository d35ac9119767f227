package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/engine"
)

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
