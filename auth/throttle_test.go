package auth

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// throttledAuth has users alice and bob, with hashes of the given cost.
func throttledAuth(t *testing.T, cost int) *Authenticator {
	t.Helper()
	var users []User
	for _, name := range []string{"alice", "bob"} {
		h, err := bcrypt.GenerateFromPassword([]byte("pw-"+name), cost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, User{Name: name, PasswordHash: string(h)})
	}
	a, err := New(Config{Enabled: true, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// basicFrom logs in as user with pw from the client address ip.
func basicFrom(a *Authenticator, ip, user, pw string) error {
	ctx := metadata.NewIncomingContext(context.Background(),
		metadata.Pairs("authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pw))))
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}})
	_, _, err := a.authenticate(ctx)
	return err
}

func TestFailedLoginThrottle(t *testing.T) {
	a := throttledAuth(t, bcrypt.MinCost)
	now := time.Unix(1_700_000_000, 0)
	a.now = func() time.Time { return now }

	for i := range 5 {
		if err := basicFrom(a, "10.0.0.1", "alice", "wrong"); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	// Locked out before any password check: the right password too.
	err := basicFrom(a, "10.0.0.1", "alice", "pw-alice")
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), `too many failed logins for user "alice" from this address; retry after 1s`) {
		t.Fatalf("locked out: %v", err)
	}
	// Another principal from that address, and alice from another.
	if err := basicFrom(a, "10.0.0.1", "bob", "pw-bob"); err != nil {
		t.Fatalf("bob from the same address: %v", err)
	}
	if err := basicFrom(a, "10.0.0.2", "alice", "pw-alice"); err != nil {
		t.Fatalf("alice from another address: %v", err)
	}
	// A name that is no user is throttled alike: nothing tells it apart.
	for range 5 {
		_ = basicFrom(a, "10.0.0.3", "nobody", "wrong")
	}
	if err := basicFrom(a, "10.0.0.3", "nobody", "x"); !strings.Contains(fmt.Sprint(err), `too many failed logins for user "nobody" from this address; retry after 1s`) {
		t.Fatalf("unknown user: %v", err)
	}
	// Each further failure doubles the lockout.
	now = now.Add(1100 * time.Millisecond)
	_ = basicFrom(a, "10.0.0.1", "alice", "wrong")
	if err := basicFrom(a, "10.0.0.1", "alice", "pw-alice"); !strings.Contains(fmt.Sprint(err), "retry after 2s") {
		t.Fatalf("second lockout: %v", err)
	}
	// Once it is over, the right password works and clears the count.
	now = now.Add(2100 * time.Millisecond)
	if err := basicFrom(a, "10.0.0.1", "alice", "pw-alice"); err != nil {
		t.Fatalf("after the lockout: %v", err)
	}
	if err := basicFrom(a, "10.0.0.1", "alice", "wrong"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("count not cleared by the success: %v", err)
	}
	// One address trying many names is locked out for the names that
	// failed; a user who has not failed still logs in from it.
	for i := range 20 {
		_ = basicFrom(a, "10.0.0.4", fmt.Sprint("user", i), "wrong")
	}
	if err := basicFrom(a, "10.0.0.4", "user3", "again"); !strings.Contains(fmt.Sprint(err), "too many failed logins from this address") {
		t.Fatalf("address lockout: %v", err)
	}
	if err := basicFrom(a, "10.0.0.4", "bob", "pw-bob"); err != nil {
		t.Fatalf("bob, who has not failed, from the locked address: %v", err)
	}
}

// TestLoginThrottleAcrossAddresses: failures of one username from many
// addresses lock the username out everywhere after accountFailures; the
// right password of another user is still accepted from a locked
// address, while a fresh name's wrong guess from it is checked (once) and
// its next one refused. Before, each address had its own count for a
// username, and an address lock refused every user.
func TestLoginThrottleAcrossAddresses(t *testing.T) {
	a := throttledAuth(t, bcrypt.MinCost)
	now := time.Unix(1_700_000_000, 0)
	a.now = func() time.Time { return now }
	for i := range accountFailures {
		if err := basicFrom(a, fmt.Sprintf("10.1.0.%d", i+1), "alice", "wrong"); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	err := basicFrom(a, "10.1.1.1", "alice", "pw-alice")
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), `too many failed logins for user "alice"; retry after 1s`) {
		t.Fatalf("alice from a new address after %d failures elsewhere: %v", accountFailures, err)
	}
	// A shared address locked by its clients' typos, under many names.
	for i := range addrFailures {
		_ = basicFrom(a, "10.2.0.1", fmt.Sprint("typo", i), "x")
	}
	if err := basicFrom(a, "10.2.0.1", "typo1", "y"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "from this address") {
		t.Fatalf("a name that failed, from the locked address: %v", err)
	}
	if err := basicFrom(a, "10.2.0.1", "bob", "pw-bob"); err != nil {
		t.Fatalf("bob, who has not failed, from the locked shared address: %v", err)
	}
	if err := basicFrom(a, "10.2.0.1", "carol", "guess"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a fresh name's guess from the locked address: %v, want it checked", err)
	}
	if err := basicFrom(a, "10.2.0.1", "carol", "guess2"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "from this address") {
		t.Fatalf("its second guess: %v, want the address lockout", err)
	}
}

// TestParallelWrongLogins: a burst of wrong passwords reaches only a few
// password checks; the rest are refused before one. The burst's CPU time
// is logged (go test -v -run TestParallelWrongLogins ./auth/).
func TestParallelWrongLogins(t *testing.T) {
	a := throttledAuth(t, bcrypt.DefaultCost)
	const burst = 20
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		checked int
	)
	start, cpu := time.Now(), cpuTime()
	for range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := basicFrom(a, "10.0.0.9", "alice", "wrong")
			mu.Lock()
			defer mu.Unlock()
			switch status.Code(err) {
			case codes.Unauthenticated:
				checked++
			case codes.ResourceExhausted:
			default:
				t.Errorf("wrong password: %v", err)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d parallel wrong logins: %d password checks, %v wall, %v CPU", burst, checked, time.Since(start), cpuTime()-cpu)
	// At most the failures before the lockout, plus the checks already
	// running when it began.
	if most := userFailures - 1 + maxConcurrentChecks; checked > most {
		t.Errorf("%d password checks for %d wrong logins, want at most %d", checked, burst, most)
	}
	if err := basicFrom(a, "10.0.0.9", "bob", "pw-bob"); err != nil {
		t.Errorf("another principal after the burst: %v", err)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
