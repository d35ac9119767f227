package lake_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// TestParseCommon: the one dialect of the commit loop and remote calls:
// defaults when absent, milliseconds, bounds, and a refusal naming the key.
func TestParseCommon(t *testing.T) {
	cases := []struct {
		props   map[string]string
		check   func(lake.Retry, catalogs.RemotePolicy) bool
		wantErr string
	}{
		{nil, func(r lake.Retry, p catalogs.RemotePolicy) bool {
			return r == lake.DefaultRetry && p == lake.DefaultRemote
		}, ""},
		{map[string]string{lake.PropCommitRetries: "0", lake.PropCommitMinWait: "7", lake.PropCommitMaxWait: "70", lake.PropCommitTotalTimeout: "700"},
			func(r lake.Retry, _ catalogs.RemotePolicy) bool {
				return r == lake.Retry{Retries: 0, MinWait: 7 * time.Millisecond, MaxWait: 70 * time.Millisecond, TotalTimeout: 700 * time.Millisecond}
			}, ""},
		{map[string]string{lake.PropRemoteTimeout: "1500", lake.PropRemoteAttempts: "2", lake.PropBreakerFailures: "9", lake.PropBreakerOpen: "10"},
			func(_ lake.Retry, p catalogs.RemotePolicy) bool {
				return p == catalogs.RemotePolicy{Timeout: 1500 * time.Millisecond, Attempts: 2, BreakerFailures: 9, BreakerOpen: 10 * time.Millisecond}
			}, ""},
		{map[string]string{lake.PropRemoteAttempts: "0"}, nil, lake.PropRemoteAttempts},
		{map[string]string{lake.PropCommitMaxWait: "5s"}, nil, lake.PropCommitMaxWait},
		{map[string]string{lake.PropCommitMinWait: "100", lake.PropCommitMaxWait: "10"}, nil, lake.PropCommitMinWait},
	}
	for _, c := range cases {
		r, p, err := lake.ParseCommon(c.props)
		if c.wantErr != "" {
			if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseCommon(%v) = %v, want ErrInvalidArgument naming %q", c.props, err, c.wantErr)
			}
			continue
		}
		if err != nil || !c.check(r, p) {
			t.Errorf("ParseCommon(%v) = %+v, %+v, %v", c.props, r, p, err)
		}
	}
}
