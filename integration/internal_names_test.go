package integration

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// No internal name reaches a client: the gateway's private views
// (__flightgw_…), the INSERT's wrapping (__src, c0) or a rewritten query.
// Every gateway a test starts is checked when the test ends: the server
// logs each failed call's client message ("call ... err=..."), and none
// may hold "__" but where the test wrote it itself in a name it sent
// (allowUnderscores).

// callErr finds the client message of a failed call in a log line.
var callErr = regexp.MustCompile(`msg=call .* err=("(?:[^"\\]|\\.)*"|\S+)$`)

// signedToken is one of the gateway's own signed handles (tickets,
// prepared statements, transaction ids: fgw1., fgwp1., fgwt1., then
// base64url, which may hold "__" by chance).
var signedToken = regexp.MustCompile(`fgw[a-z]?1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// leakedInternals are the client messages in logs that hold "__", but
// for the words of allowed and the gateway's signed tokens.
func leakedInternals(logs string, allowed []string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		m := callErr.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		msg := m[1]
		if u, err := strconv.Unquote(msg); err == nil {
			msg = u
		}
		rest := signedToken.ReplaceAllString(msg, "")
		for _, a := range allowed {
			rest = strings.ReplaceAll(rest, a, "")
		}
		if strings.Contains(rest, "__") {
			out = append(out, msg)
		}
	}
	return out
}

// checkNoInternals fails t for every client message of g that shows an
// internal name.
func (g *gateway) checkNoInternals(t *testing.T) {
	t.Helper()
	for _, msg := range leakedInternals(g.logs.String(), g.ownUnderscores) {
		t.Errorf("a client message shows an internal name: %q", msg)
	}
}

func TestLeakedInternals(t *testing.T) {
	logs := strings.Join([]string{
		`time=x level=INFO msg=call method=/a code=InvalidArgument duration=1ms err="Conversion Error: ... CAST(__src.c0 AS BIGINT)"`,
		`time=x level=INFO msg=call method=/a code=NotFound duration=1ms err="table __mine not found"`,
		`time=x level=INFO msg=call method=/a code=NotFound duration=1ms err="table people not found"`,
		`time=x level=DEBUG msg=call method=/a code=OK duration=1ms`,
		`time=x level=INFO msg="update failed" err="x __src"`,
		`time=x level=INFO msg=call method=/a code=Unavailable duration=1ms err="transaction fgwt1.eyJuIjoi__x.ab__c is held by replica 127.0.0.1:1"`,
	}, "\n")
	got := leakedInternals(logs, []string{"__mine"})
	if len(got) != 1 || !strings.Contains(got[0], "__src.c0") {
		t.Fatalf("leakedInternals = %q", got)
	}
}
