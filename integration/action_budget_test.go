package integration

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/codec/actions"
)

// TestActionBodiesBounded: through gRPC, with limits.max_action_bytes and
// limits.action_memory configured, twenty concurrent CommitMessages whose
// bodies are over max_action_bytes are all refused ResourceExhausted
// naming the limit, and a body under it is decoded (its junk payload is
// InvalidArgument).
func TestActionBodiesBounded(t *testing.T) {
	g := startGateway(t, sharedLake(t.TempDir(), "budget-key")+"limits: {max_action_bytes: 1048576, action_memory: 4194304}\n")
	c := g.flightClient(t)
	ctx := context.Background()
	req := func(n int) actions.CommitRequest {
		return actions.CommitRequest{CommitID: "c1", Tables: []actions.TableMessages{{TableRef: lakeTable("t"), Payloads: [][]byte{make([]byte, n)}}}}
	}
	big := req(2 << 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := doAction(ctx, c, actions.CommitMessages, big, nil)
			// Refused by gRPC from the message's length, before its body
			// is received (server/recvlimits.go): gRPC words the status.
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") || !strings.Contains(err.Error(), "1048576") {
				t.Errorf("oversized CommitMessages %d: %v, want ResourceExhausted naming the limit, 1048576", i, err)
			}
		}()
	}
	wg.Wait()
	if err := doAction(ctx, c, actions.CommitMessages, req(1000), nil); status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.NotFound {
		t.Errorf("CommitMessages under the bounds: %v, want it decoded and refused for its payload", err)
	}
}
