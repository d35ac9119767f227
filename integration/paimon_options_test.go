package integration

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
)

// TestPaimonLayoutOptionsThroughIngest: layout options of an ingest that
// creates a Paimon table, naming a column twice, a missing one, a bucket
// key in unaware bucket mode or on a partition column, or an absurd bucket
// count, come back InvalidArgument naming the option and the column; no
// table is created; a sound layout then creates it.
func TestPaimonLayoutOptionsThroughIngest(t *testing.T) {
	g := startGateway(t, `
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`)
	c := g.flightClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"bucket": "2", "primary-key": "id,id"}, `option "primary-key": column "id" is listed twice`},
		{map[string]string{"partition": "nope"}, `option "partition": column "nope"`},
		{map[string]string{"bucket-key": "id"}, `option "bucket-key" [id] needs a fixed bucket count`},
		{map[string]string{"bucket": "2", "bucket-key": "name", "partition": "name"}, `option "bucket-key": column "name" is a partition column`},
		{map[string]string{"bucket": "1000000"}, `option "bucket"`},
	} {
		opts := modeCreate("laid")
		opts.Catalog = ptr("pm")
		opts.Options = tc.opts
		_, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), opts)
		assertStatus(t, err, codes.InvalidArgument, tc.want)
	}
	opts := modeCreate("laid")
	opts.Catalog = ptr("pm")
	opts.Options = map[string]string{"bucket": "2", "bucket-key": " id ", "partition": "name"}
	if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 3)), opts); err != nil || n != 3 {
		t.Fatalf("a sound layout: n=%d, %v", n, err)
	}
}
