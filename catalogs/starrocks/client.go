package starrocks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// maxRedirects bounds the FE → BE redirects of one call.
const maxRedirects = 5

// maxAnswer bounds the answer body the client reads.
const maxAnswer = 1 << 20

// client speaks StarRocks' HTTP API: Basic auth on every hop, redirects
// followed by hand (so that the credentials and the body are sent again
// to the BE, which net/http does not do across hosts), Expect:
// 100-continue on bodies, and every call guarded by catalogs.Remote (a
// timeout per attempt, a circuit breaker, retries of the read-only calls),
// as every backend's remote calls are.
type client struct {
	catalog string
	cfg     config
	hc      *http.Client
	remote  *catalogs.Remote
}

// answer is one HTTP answer: the status code and the body.
type answer struct {
	code int
	body []byte
}

func newClient(catalog string, cfg config) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ExpectContinueTimeout = time.Second
	tr.TLSClientConfig = cfg.tls
	c := &client{catalog: catalog, cfg: cfg, hc: &http.Client{
		Transport: tr,
		// Redirects are followed by do, with the credentials.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	// An answer, whatever it says, is a live cluster: only a call that got
	// none (ErrUnavailable) is an outage.
	c.remote = catalogs.NewRemote("starrocks "+catalog, cfg.remotePolicy(),
		func(err error) bool { return errors.Is(err, catalogs.ErrUnavailable) })
	return c
}

// paused is the error of a call the open breaker refused.
func (c *client) paused(op string, err error) error {
	return catalogs.Errorf(catalogs.ErrUnavailable, "catalog %q: starrocks %s: the FE has failed repeatedly, calls are paused (%v)", c.catalog, op, err)
}

// request is one call: a method, a path under the FE, headers, a body
// (nil for none; kept whole so that a redirect can send it again).
type request struct {
	op     string // for messages: begin, load, prepare...
	method string
	path   string
	header map[string]string
	body   []byte
}

// do sends r to the FEs in turn (the next one only when a connection
// could not be made, so the request certainly was not received), through
// the breaker, within the call timeout.
func (c *client) do(ctx context.Context, r request) (answer, error) {
	a, err := catalogs.Guard(ctx, c.remote, false, func(cctx context.Context) (answer, error) {
		var last error
		for _, base := range c.cfg.fe {
			a, err := c.send(cctx, base.ResolveReference(&url.URL{Path: r.path}), r)
			if err == nil || !notSent(err) {
				return a, err
			}
			last = err
		}
		return answer{}, last
	})
	if catalogs.ErrBreakerOpen(err) {
		return answer{}, c.paused(r.op, err)
	}
	return a, err
}

// send makes one call, following redirects with the credentials and the
// body.
func (c *client) send(ctx context.Context, u *url.URL, r request) (answer, error) {
	for hop := 0; ; hop++ {
		var body io.Reader
		if r.body != nil {
			body = bytes.NewReader(r.body)
		}
		req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
		if err != nil {
			return answer{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: starrocks %s: %v", c.catalog, r.op, err)
		}
		req.SetBasicAuth(c.cfg.user, c.cfg.password.Reveal())
		for k, v := range r.header {
			req.Header.Set(k, v)
		}
		if r.body != nil {
			req.Header.Set("Expect", "100-continue")
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return answer{}, &transportError{op: r.op, host: u.Host, err: err, catalog: c.catalog}
		}
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			loc, err := u.Parse(resp.Header.Get("Location"))
			if err != nil || hop >= maxRedirects {
				return answer{}, catalogs.Errorf(catalogs.ErrUnavailable, "catalog %q: starrocks %s: bad redirect from %s", c.catalog, r.op, u.Host)
			}
			u = loc
			continue
		case http.StatusUnauthorized, http.StatusForbidden:
			return answer{}, catalogs.Errorf(catalogs.ErrPermissionDenied, "catalog %q: starrocks %s: %s refused user %q (HTTP %d)", c.catalog, r.op, u.Host, c.cfg.user, resp.StatusCode)
		}
		if rerr != nil {
			return answer{}, &transportError{op: r.op, host: u.Host, err: rerr, catalog: c.catalog}
		}
		return answer{code: resp.StatusCode, body: raw}, nil
	}
}

// transportError is a call that got no answer: the request may or may not
// have been applied.
type transportError struct {
	catalog, op, host string
	err               error
}

func (e *transportError) Error() string {
	return fmt.Sprintf("catalog %q: starrocks %s at %s: %v", e.catalog, e.op, e.host, e.err)
}

func (e *transportError) Unwrap() []error { return []error{catalogs.ErrUnavailable, e.err} }

// notSent reports whether err is a connection that was never made: the
// request was certainly not received, so sending it again is safe.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// result is the answer of the transaction interface and of _stream_load.
type result struct {
	TxnID                int64  `json:"TxnId"`
	Label                string `json:"Label"`
	Status               string `json:"Status"`
	Message              string `json:"Message"`
	ExistingJobStatus    string `json:"ExistingJobStatus"`
	NumberTotalRows      int64  `json:"NumberTotalRows"`
	NumberLoadedRows     int64  `json:"NumberLoadedRows"`
	NumberFilteredRows   int64  `json:"NumberFilteredRows"`
	NumberUnselectedRows int64  `json:"NumberUnselectedRows"`
	LoadBytes            int64  `json:"LoadBytes"`
	ErrorURL             string `json:"ErrorURL"`
}

// The Status words of the answers.
const (
	statusOK           = "OK"
	statusSuccess      = "Success"
	statusFail         = "Fail"
	statusFailed       = "FAILED"
	statusLabelExists  = "Label Already Exists"
	statusLabelExists2 = "LABEL_ALREADY_EXISTS"
	statusPublishTO    = "Publish Timeout"
	statusTxnNotExists = "TXN_NOT_EXISTS"
)

// txnCall calls one operation of the transaction interface.
func (c *client) txnCall(ctx context.Context, op, method string, header map[string]string, body []byte) (result, error) {
	a, err := c.do(ctx, request{op: op, method: method, path: "/api/transaction/" + op, header: header, body: body})
	if err != nil {
		return result{}, err
	}
	var res result
	if err := json.Unmarshal(a.body, &res); err != nil || res.Status == "" {
		return result{}, catalogs.Errorf(catalogs.ErrUnavailable, "catalog %q: starrocks %s answered HTTP %d without a status: %.200s", c.catalog, op, a.code, a.body)
	}
	return res, nil
}

// The states get_load_state reports (StarRocks' TransactionStatus).
const (
	stateUnknown   = "UNKNOWN"
	statePrepare   = "PREPARE"
	statePrepared  = "PREPARED"
	stateCommitted = "COMMITTED"
	stateVisible   = "VISIBLE"
	stateAborted   = "ABORTED"
)

// loadState asks the FE for a label's transaction state. It is read-only,
// so it is retried (bounded, with backoff), an answer without a state
// too; only a call that got no answer counts in the breaker (an answer,
// whatever it says, is a live cluster).
func (c *client) loadState(ctx context.Context, db, lbl string) (string, error) {
	var last error
	for i := range max(1, c.cfg.retries) {
		if i > 0 {
			if err := sleep(ctx, backoff(i-1)); err != nil {
				return "", last
			}
		}
		st, err := c.loadStateOnce(ctx, db, lbl)
		if err == nil || !errors.Is(err, catalogs.ErrUnavailable) || catalogs.ErrBreakerOpen(err) {
			return st, err
		}
		last = err
	}
	return "", last
}

// loadStateOnce is one get_load_state call, to the FEs in turn, through
// the breaker.
func (c *client) loadStateOnce(ctx context.Context, db, lbl string) (string, error) {
	path := "/api/" + url.PathEscape(db) + "/get_load_state"
	a, err := catalogs.Guard(ctx, c.remote, false, func(cctx context.Context) (answer, error) {
		var last error
		for _, base := range c.cfg.fe {
			u := base.ResolveReference(&url.URL{Path: path, RawQuery: url.Values{"label": {lbl}}.Encode()})
			a, err := c.send(cctx, u, request{op: "get_load_state", method: http.MethodGet})
			if err == nil || !notSent(err) {
				return a, err
			}
			last = err
		}
		return answer{}, last
	})
	if catalogs.ErrBreakerOpen(err) {
		return "", c.paused("get_load_state", err)
	}
	if err != nil {
		return "", err
	}
	var res struct {
		Status  string `json:"status"`
		Msg     string `json:"msg"`
		Message string `json:"message"`
		State   string `json:"state"`
	}
	if err := json.Unmarshal(a.body, &res); err != nil || a.code != http.StatusOK {
		return "", catalogs.Errorf(catalogs.ErrUnavailable, "catalog %q: starrocks get_load_state of label %s answered HTTP %d: %.200s", c.catalog, lbl, a.code, a.body)
	}
	if res.Status != statusOK && res.State == "" {
		return "", catalogs.Errorf(catalogs.ErrNotFound, "catalog %q: starrocks get_load_state of label %s in database %s: %s", c.catalog, lbl, db, res.Msg)
	}
	return res.State, nil
}

// backoff is the wait before attempt+1 of a call the client repeats
// itself (begin, commit): catalogs.Backoff from 100ms, capped at 2s.
func backoff(attempt int) time.Duration {
	return catalogs.Backoff(attempt, 100*time.Millisecond, 2*time.Second)
}

// sleep waits for d or until ctx ends (catalogs.Sleep).
func sleep(ctx context.Context, d time.Duration) error { return catalogs.Sleep(ctx, d) }
