package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
)

// TestCommitMessagesOneFileSetPerID: a commit id names exactly one set of
// files, across two gateways sharing the table (Iceberg and Paimon). Two
// coordinators sending different payloads under one id at the same
// instant: one lands, the other is FailedPrecondition naming the id, and
// the table holds the winner's rows only; the id reused with other
// payloads is refused; its repeat with its own payload answers the rows
// that landed; a payload listed twice is InvalidArgument. Before, both
// racing coordinators were told OK, each with its own row count, while
// only one payload's rows landed.
func TestCommitMessagesOneFileSetPerID(t *testing.T) {
	requireEngine(t)
	ctx := context.Background()
	type backend struct {
		catalog string
		clients []*flightsql.Client
		create  *flightsql.ExecuteIngestOpts
		append  func() *flightsql.ExecuteIngestOpts
		count   func() string
	}
	for _, kind := range []string{"iceberg", "paimon"} {
		t.Run(kind, func(t *testing.T) {
			var b backend
			switch kind {
			case "iceberg":
				shared := t.TempDir()
				conf := sharedLake(shared, "one-set-key")
				gs := []*gateway{startGateway(t, conf), startGateway(t, conf)}
				b = backend{catalog: "lake", clients: []*flightsql.Client{gs[0].flightClient(t), gs[1].flightClient(t)},
					create: modeCreate("orders"), append: func() *flightsql.ExecuteIngestOpts { return modeAppend("orders") }}
				b.count = func() string { return countIn(t, b.clients[0], "orders") }
			case "paimon":
				gs := paimonGateways(t, t.TempDir(), 2)
				b = backend{catalog: "pm", clients: []*flightsql.Client{gs[0].flightClient(t), gs[1].flightClient(t)},
					create: pmIngest("orders", true, nil), append: func() *flightsql.ExecuteIngestOpts { return pmIngest("orders", false, nil) }}
				b.count = func() string { return queryOne(t, gs[0], "SELECT count(*) FROM pm.default.orders") }
			}
			body := func(id string, payloads ...[]byte) map[string]any {
				return map[string]any{"commit_id": id, "tables": []map[string]any{
					{"catalog": b.catalog, "schema": "default", "table": "orders", "payloads": payloads}}}
			}
			seed := prepareIn(t, b.clients[0], b.create, 0, 1)
			if err := doAction(ctx, b.clients[0], "CommitMessages", body("seed", seed), nil); err != nil {
				t.Fatal(err)
			}
			rows := 1
			for trial := range 3 {
				id := fmt.Sprintf("race-%d", trial)
				var p [2][]byte
				for i := range 2 {
					p[i] = prepareIn(t, b.clients[i], b.append(), 1000*(trial+1)+100*i, 10*(i+1))
				}
				var (
					wg   sync.WaitGroup
					res  [2]committedReply
					errs [2]error
				)
				start := make(chan struct{})
				for i := range 2 {
					wg.Go(func() {
						<-start
						errs[i] = doAction(ctx, b.clients[i], "CommitMessages", body(id, p[i]), &res[i])
					})
				}
				close(start)
				wg.Wait()
				if errs[0] == nil && errs[1] == nil {
					t.Fatalf("trial %d: both coordinators were told OK: %+v, %+v", trial, res[0], res[1])
				}
				won := 0
				if errs[0] != nil {
					won = 1
				}
				if errs[won] != nil {
					t.Fatalf("trial %d: neither landed: %v, %v", trial, errs[0], errs[1])
				}
				assertStatus(t, errs[1-won], codes.FailedPrecondition, id)
				if got := res[won].Tables[0].Rows; got != uint64(10*(won+1)) {
					t.Fatalf("trial %d: the winner was told %d rows, it committed %d", trial, got, 10*(won+1))
				}
				rows += 10 * (won + 1)
				if got := b.count(); got != fmt.Sprint(rows) {
					t.Fatalf("trial %d: %s rows in the table, want %d", trial, got, rows)
				}
				// The id reused with the other payload, on either gateway: refused.
				for i := range 2 {
					assertStatus(t, doAction(ctx, b.clients[i], "CommitMessages", body(id, p[1-won]), nil), codes.FailedPrecondition, id)
				}
				// Its repeat answers what landed.
				var again committedReply
				if err := doAction(ctx, b.clients[1-won], "CommitMessages", body(id, p[won]), &again); err != nil ||
					again.Tables[0].SnapshotID != res[won].Tables[0].SnapshotID || again.Tables[0].Rows != res[won].Tables[0].Rows {
					t.Fatalf("trial %d: repeat %+v, %v; first %+v", trial, again, err, res[won])
				}
				// The refused payload lands under its own id, once.
				assertStatus(t, doAction(ctx, b.clients[0], "CommitMessages", body(id+"-rest", p[1-won], p[1-won]), nil), codes.InvalidArgument, "twice")
				var rest committedReply
				if err := doAction(ctx, b.clients[0], "CommitMessages", body(id+"-rest", p[1-won]), &rest); err != nil || rest.Tables[0].Rows != uint64(10*(2-won)) {
					t.Fatalf("trial %d: the refused payload under its own id: %+v, %v", trial, rest, err)
				}
				rows += 10 * (2 - won)
				if got := b.count(); got != fmt.Sprint(rows) {
					t.Fatalf("trial %d: %s rows in the table, want %d", trial, got, rows)
				}
			}
		})
	}
}
