package catalogtest

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// minLeakCheck is the shortest token the suite looks for in printed
// output: a shorter one would be found in unrelated text.
const minLeakCheck = 8

// testSecurityContext checks GetSecurityContext: the token never prints,
// however the context is printed or logged; the credential is not expired
// by the backend's clock; an expiring one is replaced by a fresh one once
// it has expired; the scope, when it names a table, names this one; an
// unknown table is ErrNotFound.
func (s suite) testSecurityContext(t *testing.T) {
	in, id := s.setup(t, "secured")
	ctx := context.Background()
	now := in.now()
	sec, err := in.Provider.GetSecurityContext(ctx, id)
	if err != nil {
		t.Fatalf("GetSecurityContext: %v", err)
	}
	checkSecurityContext(t, "GetSecurityContext", sec, id, now)
	t.Logf("credential: a %d-byte token, expiring at %v, scope %s; encryption %s",
		len(sec.Credentials.Token.Reveal()), sec.Credentials.ExpiresAt, sec.Credentials.Scope.Kind, sec.Encryption.Kind)

	if exp := sec.Credentials.ExpiresAt; !exp.IsZero() {
		if in.Advance == nil {
			t.Logf("the credential expires at %s but the harness cannot move the backend's clock: its refresh is not checked", exp)
		} else {
			in.Advance(exp.Sub(now) + time.Second)
			later := in.now()
			if !sec.Credentials.Expired(later) {
				t.Fatalf("Instance.Advance did not move the backend's clock past %s (now %s)", exp, later)
			}
			fresh, err := in.Provider.GetSecurityContext(ctx, id)
			if err != nil {
				t.Fatalf("GetSecurityContext after the credential expired: %v (want a fresh credential)", err)
			}
			checkSecurityContext(t, "GetSecurityContext after expiry", fresh, id, later)
			if !fresh.Credentials.ExpiresAt.After(exp) {
				t.Errorf("credential after expiry expires at %s, not after the expired one's %s", fresh.Credentials.ExpiresAt, exp)
			}
		}
	}

	missing := catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: "no_such_table"}
	_, err = in.Provider.GetSecurityContext(ctx, missing)
	wantKind(t, "GetSecurityContext(unknown)", err, catalogs.ErrNotFound, "no_such_table")
}

// checkSecurityContext checks one security context handed out at now.
func checkSecurityContext(t *testing.T, what string, sec catalogs.SecurityContext, id catalogs.TableIdent, now time.Time) {
	t.Helper()
	c := sec.Credentials
	if c.Expired(now) {
		t.Errorf("%s: the credential expired at %s (now %s): an expired credential must never be returned", what, c.ExpiresAt, now)
	}
	if sc := c.Scope.Table; sc != nil && sc.Key() != id.Key() {
		t.Errorf("%s: credential scope names table %s, want %s", what, sc, id)
	}
	switch sec.Encryption.Kind {
	case catalogs.EncryptionNone, catalogs.EncryptionStorageLevel, catalogs.EncryptionClientSide:
	default:
		t.Errorf("%s: encryption kind %q is none of the known ones", what, sec.Encryption.Kind)
	}
	checkRedacted(t, what, sec)
}

// checkRedacted prints and logs sec every way the gateway might and
// checks that the token never shows, [REDACTED] standing in for it.
func checkRedacted(t *testing.T, what string, sec catalogs.SecurityContext) {
	t.Helper()
	tok := sec.Credentials.Token.Reveal()
	outs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		outs["fmt "+verb+" of the context"] = fmt.Sprintf(verb, sec)
		outs["fmt "+verb+" of the credential"] = fmt.Sprintf(verb, &sec.Credentials)
		outs["fmt "+verb+" of the token"] = fmt.Sprintf(verb, sec.Credentials.Token)
	}
	for name, v := range map[string]any{"context": sec, "credential": sec.Credentials} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: json.Marshal of the %s: %v", what, name, err)
		}
		outs["json of the "+name] = string(raw)
	}
	var jsonLog, textLog bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&jsonLog, nil), slog.NewTextHandler(&textLog, nil)} {
		slog.New(h).Info("security context", "sec", sec, "cred", sec.Credentials, "token", sec.Credentials.Token)
	}
	outs["slog JSON"], outs["slog text"] = jsonLog.String(), textLog.String()
	if tok == "" {
		return
	}
	if len(tok) < minLeakCheck {
		t.Logf("%s: the token is %d bytes, too short to look for in printed output", what, len(tok))
		return
	}
	for how, out := range outs {
		if strings.Contains(out, tok) || strings.Contains(out, hex.EncodeToString([]byte(tok))) {
			t.Errorf("%s: %s shows the token: %s", what, how, strings.ReplaceAll(out, tok, "<TOKEN>"))
		}
		if !strings.Contains(out, "[REDACTED]") {
			t.Errorf("%s: %s does not show [REDACTED] for the token: %s", what, how, out)
		}
	}
}
