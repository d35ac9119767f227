package integration

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/codec/actions"
)

// hugeMsg is a request message of one field of n bytes that the client
// sends without holding it: one 1 MiB buffer of zeros, referenced n/1MiB
// times (hugeCodec), so that the memory the test measures is the
// gateway's.
type hugeMsg struct{ data mem.BufferSlice }

var zeroMiB = make([]byte, 1<<20)

// newHugeMsg is a message whose leading fields are head (already encoded)
// followed by field num of n zero bytes.
func newHugeMsg(head []byte, num protowire.Number, n int) *hugeMsg {
	h := protowire.AppendTag(append([]byte(nil), head...), num, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(n))
	s := mem.BufferSlice{mem.SliceBuffer(h)}
	for ; n > 0; n -= len(zeroMiB) {
		s = append(s, mem.SliceBuffer(zeroMiB[:min(n, len(zeroMiB))]))
	}
	return &hugeMsg{data: s}
}

// hugeCodec sends a hugeMsg as it is and everything else as protobuf.
type hugeCodec struct{ encoding.CodecV2 }

func (c hugeCodec) Marshal(v any) (mem.BufferSlice, error) {
	if h, ok := v.(*hugeMsg); ok {
		return h.data, nil
	}
	return c.CodecV2.Marshal(v)
}

func newHugeCodec() hugeCodec { return hugeCodec{encoding.GetCodecV2("proto")} }

// peakRSSGrowth runs f and returns how far the process's resident set
// rose over what it was before, sampled every few milliseconds.
func peakRSSGrowth(t *testing.T, f func()) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	base := rssBytes(t)
	var peak atomic.Int64
	peak.Store(base)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := rssBytes(t); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-sampled
	return peak.Load() - base
}

const hugeBody = 200 << 20

// rawConn is a plain gRPC connection to the gateway.
func (g *gateway) rawConn(t *testing.T) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestUnauthenticatedBodiesNotBuffered: four concurrent 200 MiB
// GetFlightInfo, then GetSchema, calls without credentials are refused
// Unauthenticated, and the gateway's memory grows by less than 50 MB:
// credentials are checked before a request body is read.
func TestUnauthenticatedBodiesNotBuffered(t *testing.T) {
	pw, _ := auth.HashPassword("pw")
	g := startGateway(t, fmt.Sprintf("auth: {enabled: true, users: [{name: alice, password_hash: %q}]}\n", pw))
	cc := g.rawConn(t)
	// FlightDescriptor{type: CMD, cmd: 200 MiB}.
	desc := newHugeMsg([]byte{0x08, 0x02}, 2, hugeBody)
	for _, method := range []string{"GetFlightInfo", "GetSchema"} {
		growth := peakRSSGrowth(t, func() {
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					err := cc.Invoke(ctx, "/arrow.flight.protocol.FlightService/"+method, desc, &flight.FlightInfo{}, grpc.ForceCodecV2(newHugeCodec()))
					if status.Code(err) != codes.Unauthenticated {
						t.Errorf("%s without credentials: %v, want Unauthenticated", method, err)
					}
				})
			}
			wg.Wait()
		})
		t.Logf("%s: RSS grew %d MB", method, growth>>20)
		if growth >= 50<<20 {
			t.Errorf("four unauthenticated 200 MiB %s calls grew the gateway's RSS by %d MB, want < 50 MB", method, growth>>20)
		}
	}
}

// TestActionBodiesRefusedWhileReceived: four concurrent authenticated
// 200 MiB DoAction bodies are refused ResourceExhausted, and the gateway's
// memory grows by less than limits.action_memory: max_action_bytes is
// enforced from the message's length, before its body is read.
func TestActionBodiesRefusedWhileReceived(t *testing.T) {
	pw, _ := auth.HashPassword("pw")
	const actionMemory = 256 << 20
	g := startGateway(t, fmt.Sprintf("auth: {enabled: true, users: [{name: alice, password_hash: %q}]}\nlimits: {action_memory: %d}\n", pw, actionMemory))
	_, ctx := login(t, g, "alice", "pw")
	md, _ := metadata.FromOutgoingContext(ctx)
	// Action{type: "CommitMessages", body: 200 MiB}.
	head := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), actions.CommitMessages)
	action := newHugeMsg(head, 2, hugeBody)
	cc := g.rawConn(t)
	growth := peakRSSGrowth(t, func() {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), time.Minute)
				defer cancel()
				stream, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/arrow.flight.protocol.FlightService/DoAction",
					grpc.ForceCodecV2(newHugeCodec()))
				if err == nil {
					if err = stream.SendMsg(action); err == nil {
						_ = stream.CloseSend()
						err = stream.RecvMsg(&flight.Result{})
					}
				}
				if err == nil || status.Code(err) == codes.Unknown {
					err = stream.RecvMsg(&flight.Result{})
				}
				if status.Code(err) != codes.ResourceExhausted {
					t.Errorf("200 MiB DoAction: %v, want ResourceExhausted", err)
				}
			})
		}
		wg.Wait()
	})
	t.Logf("DoAction: RSS grew %d MB", growth>>20)
	if growth >= actionMemory {
		t.Errorf("four 200 MiB DoAction bodies grew the gateway's RSS by %d MB, want < limits.action_memory (%d MB)", growth>>20, actionMemory>>20)
	}
}

// TestReceiveLimitsPerMethod: with limits.max_request_bytes of 64 KiB, a
// GetFlightInfo of a 100 KiB query is refused ResourceExhausted, while a
// DoPut batch of several MiB (limits.max_batch_bytes) lands and a
// CommitMessages body of 512 KiB (limits.max_action_bytes) is decoded:
// each method has its own receive limit.
func TestReceiveLimitsPerMethod(t *testing.T) {
	g := startGateway(t, sharedLake(t.TempDir(), "limits-key")+"limits: {max_request_bytes: 65536, max_action_bytes: 1048576}\n")
	c := g.flightClient(t)
	ctx := context.Background()
	_, err := c.Execute(ctx, "SELECT 1 -- "+strings.Repeat("x", 100<<10))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("GetFlightInfo of 100 KiB: %v, want ResourceExhausted", err)
	}
	rec := wideRows(0, 200_000) // some 6 MiB in one batch
	defer rec.Release()
	if _, err := c.ExecuteIngest(ctx, reader(t, rec), modeCreate("wide")); err != nil {
		t.Errorf("DoPut of a 200000-row batch: %v", err)
	}
	body := actions.CommitRequest{CommitID: "c1", Tables: []actions.TableMessages{{TableRef: lakeTable("wide"), Payloads: [][]byte{make([]byte, 512<<10)}}}}
	if err := doAction(ctx, c, actions.CommitMessages, body, nil); status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.NotFound {
		t.Errorf("CommitMessages of 512 KiB: %v, want it decoded and refused for its payload", err)
	}
}
