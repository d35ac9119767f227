package starrocks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// TestClientBreaker: the HTTP client's breaker (catalogs.Remote) opens
// after breakerFailures calls that got no answer, and then refuses calls
// as Unavailable without sending them; an answer, even a refusal of the
// user or an answer without a state, never counts; get_load_state,
// read-only, is tried retries times.
func TestClientBreaker(t *testing.T) {
	var states int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/get_load_state") {
			states++
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there: every call to it gets no answer

	cfgFor := func(base string, failures uint32) config {
		u, _ := url.Parse(base)
		return config{fe: []*url.URL{u}, user: "root", timeout: 2 * time.Second, retries: 3,
			breakerFailures: failures, breakerOpen: time.Minute}
	}
	ctx := context.Background()

	live := newClient("sr", cfgFor(srv.URL, 2))
	for range 5 {
		_, err := live.txnCall(ctx, "begin", http.MethodPost, nil, nil)
		if !errors.Is(err, catalogs.ErrPermissionDenied) {
			t.Fatalf("a refused user: %v, want PermissionDenied", err)
		}
	}
	if st := live.remote.State(); st != catalogs.BreakerClosed {
		t.Errorf("after 5 refusals of the user the breaker is %v, want closed", st)
	}
	states = 0
	if _, err := live.loadState(ctx, "db", "l1"); !errors.Is(err, catalogs.ErrUnavailable) {
		t.Errorf("get_load_state answered 503: %v, want Unavailable", err)
	}
	if states != 3 {
		t.Errorf("get_load_state was tried %d times, want retries (3)", states)
	}
	if st := live.remote.State(); st != catalogs.BreakerClosed {
		t.Errorf("after get_load_state answers without a state the breaker is %v, want closed (an answer is a live FE)", st)
	}

	down := newClient("sr", cfgFor(dead, 2))
	for i := range 2 {
		if _, err := down.txnCall(ctx, "begin", http.MethodPost, nil, nil); !errors.Is(err, catalogs.ErrUnavailable) {
			t.Fatalf("call %d to a dead FE: %v, want Unavailable", i, err)
		}
	}
	if st := down.remote.State(); st != catalogs.BreakerOpen {
		t.Fatalf("after 2 calls without an answer the breaker is %v, want open", st)
	}
	_, err = down.txnCall(ctx, "commit", http.MethodPost, nil, nil)
	if !errors.Is(err, catalogs.ErrUnavailable) || !strings.Contains(err.Error(), "paused") {
		t.Errorf("a call with the breaker open: %v, want Unavailable saying calls are paused", err)
	}
}
