package auth

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Failed-login throttling (docs/configuration.md, "Authentication"). Each
// password check costs a bcrypt comparison (tens of milliseconds of CPU),
// so failures are counted under three keys, and checked before the
// comparison:
//   - a username from one client address: userFailures lock that pair;
//   - a username from any address: accountFailures lock the username
//     everywhere, so that guesses spread over many addresses are bounded
//     as one address's are;
//   - a client address, whatever the names: addrFailures lock the
//     address, but only for the usernames that have failed (anywhere): a
//     username without failures is still checked from a locked address,
//     one comparison at a time for that address, so behind a NAT or a
//     proxy one client's typos delay the guesses of the others without
//     locking their users out.
//
// Past its threshold a key is locked for a time that doubles with each
// further failure. The same counting applies to a name that is no user,
// so the answer never tells whether the user exists. A success clears
// its username's counts (the pair's and the username's). At most
// maxConcurrentChecks comparisons run at once; a login waiting for one
// re-checks the lockout when its turn comes, so a burst of wrong
// passwords costs a few comparisons, not one each.
const (
	// userFailures failed logins of one username from one address lock
	// that pair out.
	userFailures = 5
	// accountFailures failed logins of one username, from any addresses,
	// lock the username out.
	accountFailures = 10
	// addrFailures failed logins from one address, whatever the names,
	// lock the address out for the names that failed.
	addrFailures = 20
	// firstLockout is the first lockout; each further failure doubles it,
	// up to maxLockout.
	firstLockout = time.Second
	maxLockout   = 5 * time.Minute
	// forgetAfter drops a key whose last failure is this old.
	forgetAfter = 15 * time.Minute
	// maxThrottleKeys bounds the keys kept; when full, stale ones are
	// dropped, and new keys are not counted until there is room (the
	// comparison bound still holds).
	maxThrottleKeys = 100000
	// maxConcurrentChecks bounds the bcrypt comparisons running at once,
	// and maxCheckWait how long a login waits for one.
	maxConcurrentChecks = 4
	maxCheckWait        = 10 * time.Second
)

// throttle counts failed logins. Its zero value is not ready: use
// newThrottle.
type throttle struct {
	mu    sync.Mutex
	keys  map[string]*failures
	slots chan struct{}
	// lockedAddrs are the comparison slots of locked addresses, one each.
	lockedAddrs map[string]chan struct{}
	now         func() time.Time
}

type failures struct {
	n     int
	last  time.Time
	until time.Time // locked out until then
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{keys: map[string]*failures{}, slots: make(chan struct{}, maxConcurrentChecks),
		lockedAddrs: map[string]chan struct{}{}, now: now}
}

// clientAddr is the host of the caller's address ("" when unknown).
func clientAddr(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return p.Addr.String()
	}
	return host
}

func userKey(user, addr string) string { return "u\x00" + user + "\x00" + addr }
func accountKey(user string) string    { return "n\x00" + user }
func addrKey(addr string) string       { return "a\x00" + addr }

// check refuses a login of user from addr that is locked out. addrLocked
// tells a login let through a locked address (its user has not failed):
// it takes the address's one comparison slot (acquire).
func (t *throttle) check(user, addr string) (addrLocked bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if f := t.keys[accountKey(user)]; f != nil && now.Before(f.until) {
		return false, status.Errorf(codes.ResourceExhausted, "too many failed logins for user %q; retry after %s", user, retryAfter(f.until.Sub(now)))
	}
	if f := t.keys[userKey(user, addr)]; f != nil && now.Before(f.until) {
		return false, status.Errorf(codes.ResourceExhausted, "too many failed logins for user %q from this address; retry after %s", user, retryAfter(f.until.Sub(now)))
	}
	if f := t.keys[addrKey(addr)]; f != nil && now.Before(f.until) {
		if t.keys[accountKey(user)] != nil || t.keys[userKey(user, addr)] != nil {
			return false, status.Errorf(codes.ResourceExhausted, "too many failed logins from this address; retry after %s", retryAfter(f.until.Sub(now)))
		}
		return true, nil
	}
	return false, nil
}

func retryAfter(d time.Duration) string {
	return fmt.Sprintf("%ds", int((d+time.Second-1)/time.Second))
}

// failed counts a failed login of user from addr.
func (t *throttle) failed(user, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.count(userKey(user, addr), userFailures, now)
	t.count(accountKey(user), accountFailures, now)
	t.count(addrKey(addr), addrFailures, now)
}

func (t *throttle) count(key string, threshold int, now time.Time) {
	f := t.keys[key]
	if f == nil {
		if len(t.keys) >= maxThrottleKeys {
			t.sweep(now)
			if len(t.keys) >= maxThrottleKeys {
				return
			}
		}
		f = &failures{}
		t.keys[key] = f
	}
	f.n++
	f.last = now
	if f.n >= threshold {
		lock := maxLockout
		if shift := f.n - threshold; shift < 20 {
			lock = min(maxLockout, firstLockout<<shift)
		}
		f.until = now.Add(lock)
	}
}

// sweep drops keys whose last failure is older than forgetAfter and that
// are not locked out. t.mu must be held.
func (t *throttle) sweep(now time.Time) {
	for k, f := range t.keys {
		if now.Sub(f.last) > forgetAfter && !now.Before(f.until) {
			delete(t.keys, k)
		}
	}
}

// succeeded clears the failures of user: from addr, and in all.
func (t *throttle) succeeded(user, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.keys, userKey(user, addr))
	delete(t.keys, accountKey(user))
}

// acquire waits for one of the comparison slots, at most maxCheckWait;
// a login through a locked address (addrLocked) first waits for that
// address's one slot.
func (t *throttle) acquire(ctx context.Context, addr string, addrLocked bool) (release func(), err error) {
	timer := time.NewTimer(maxCheckWait)
	defer timer.Stop()
	wait := func(slots chan struct{}) error {
		select {
		case slots <- struct{}{}:
			return nil
		case <-timer.C:
			return status.Errorf(codes.ResourceExhausted, "too many logins in progress; retry later")
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	var own chan struct{}
	if addrLocked {
		t.mu.Lock()
		if own = t.lockedAddrs[addr]; own == nil {
			own = make(chan struct{}, 1)
			t.lockedAddrs[addr] = own
		}
		t.mu.Unlock()
		if err := wait(own); err != nil {
			return nil, err
		}
	}
	if err := wait(t.slots); err != nil {
		if own != nil {
			<-own
		}
		return nil, err
	}
	return func() {
		<-t.slots
		if own != nil {
			<-own
			t.mu.Lock()
			// The address's slot is dropped with its last user: one
			// created meanwhile by a waiter stays.
			if len(own) == 0 && t.lockedAddrs[addr] == own {
				delete(t.lockedAddrs, addr)
			}
			t.mu.Unlock()
		}
	}, nil
}
