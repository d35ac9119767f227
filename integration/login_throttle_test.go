package integration

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
)

// clientFrom is a Flight SQL client whose connection leaves from the
// loopback address 127.0.0.n.
func (g *gateway) clientFrom(t *testing.T, n int) *flightsql.Client {
	t.Helper()
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: local}
		return d.DialContext(ctx, "tcp", addr)
	}
	c, err := flightsql.NewClient(g.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLoginThrottleFromManyAddresses: 300 wrong passwords for one user
// from 60 loopback addresses reach at most a few more password checks
// than the per-user threshold (10), the rest refused before one; and on a
// shared address locked by other names' failures, a user who has not
// failed logs in with the right password. Before, every address had 5
// checks of its own (300 in all), and the locked address refused
// everyone.
func TestLoginThrottleFromManyAddresses(t *testing.T) {
	alicePw, _ := auth.HashPassword("alice-pw")
	bobPw, _ := auth.HashPassword("bob-pw")
	g := startGateway(t, fmt.Sprintf("auth:\n  enabled: true\n  users:\n    - {name: alice, password_hash: %q}\n    - {name: bob, password_hash: %q}\n", alicePw, bobPw))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu      sync.Mutex
		checked int
		wg      sync.WaitGroup
	)
	for n := 10; n < 70; n++ {
		c := g.clientFrom(t, n)
		wg.Go(func() {
			for range 5 {
				_, err := c.Client.AuthenticateBasicToken(ctx, "alice", "wrong")
				mu.Lock()
				switch status.Code(err) {
				case codes.Unauthenticated:
					checked++
				case codes.ResourceExhausted:
				default:
					t.Errorf("wrong password from 127.0.0.%d: %v", n, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("300 wrong passwords from 60 addresses: %d password checks", checked)
	if most := 10 + 4; checked > most {
		t.Errorf("300 wrong passwords from 60 addresses reached %d password checks, want at most %d", checked, most)
	}

	// 127.0.0.200 is shared: its other clients' typos lock it.
	shared := g.clientFrom(t, 200)
	for i := range 20 {
		if _, err := shared.Client.AuthenticateBasicToken(ctx, fmt.Sprint("typo", i), "x"); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("typo %d: %v", i, err)
		}
	}
	if _, err := shared.Client.AuthenticateBasicToken(ctx, "typo3", "x"); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a name that failed, from the locked address: %v, want ResourceExhausted", err)
	}
	if _, err := shared.Client.AuthenticateBasicToken(ctx, "bob", "bob-pw"); err != nil {
		t.Fatalf("bob, who has not failed, from the shared locked address: %v", err)
	}
}
