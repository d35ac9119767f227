package catalogs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRemote(t *testing.T) {
	def := RemotePolicy{Timeout: time.Minute, Attempts: 3, BreakerFailures: 5, BreakerOpen: 30 * time.Second}
	for _, tc := range []struct {
		name    string
		props   map[string]string
		aliases map[string]string
		want    RemotePolicy
		err     string // a word of the error, naming the property
	}{
		{"defaults", nil, ServiceAliases, def, ""},
		{"canonical", map[string]string{PropRemoteTimeout: "1500", PropRemoteAttempts: "7", PropBreakerFailures: "2", PropBreakerOpen: "250"}, nil,
			RemotePolicy{Timeout: 1500 * time.Millisecond, Attempts: 7, BreakerFailures: 2, BreakerOpen: 250 * time.Millisecond}, ""},
		{"older spellings", map[string]string{"timeout": "20s", "retries": "4", "breaker_failures": "9", "breaker_open": "1m"}, ServiceAliases,
			RemotePolicy{Timeout: 20 * time.Second, Attempts: 4, BreakerFailures: 9, BreakerOpen: time.Minute}, ""},
		{"older spelling not taken without aliases", map[string]string{"timeout": "20s"}, nil, def, ""},
		{"both spellings", map[string]string{"timeout": "20s", PropRemoteTimeout: "100"}, ServiceAliases, def, PropRemoteTimeout},
		{"zero", map[string]string{PropRemoteAttempts: "0"}, nil, def, PropRemoteAttempts},
		{"not a number", map[string]string{PropBreakerFailures: "many"}, nil, def, PropBreakerFailures},
		{"a duration where ms are wanted", map[string]string{PropRemoteTimeout: "20s"}, nil, def, PropRemoteTimeout},
		{"a bad duration", map[string]string{"breaker_open": "soon"}, ServiceAliases, def, "breaker_open"},
		{"sub-millisecond", map[string]string{"timeout": "10us"}, ServiceAliases, def, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRemote(tc.props, def, tc.aliases)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `"`+tc.err+`"`) {
					t.Fatalf("err = %v, want InvalidArgument naming %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
