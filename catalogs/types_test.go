package catalogs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

const token = "s3cr3t-t0ken-value"

func TestSecretNeverPrints(t *testing.T) {
	cred := CatalogCredential{Token: NewSecret(token), ExpiresAt: time.Unix(1700000000, 0).UTC(),
		Scope: CredentialScope{Kind: ScopeTableReadWrite, Table: &TableIdent{Catalog: "c", Namespace: []string{"n"}, Name: "t"}}}
	sc := SecurityContext{Encryption: EncryptionLevel{Kind: EncryptionNone}, Credentials: cred}

	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&logs, nil), slog.NewJSONHandler(&logs, nil)} {
		l := slog.New(h)
		l.Info("cred", "token", cred.Token, "cred", cred, "ctx", sc)
		l.Info("any", slog.Any("secret", cred.Token))
	}
	js, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"slog":  logs.String(),
		"json":  string(js),
		"%v":    fmt.Sprintf("%v", cred),
		"%+v":   fmt.Sprintf("%+v", sc),
		"%#v":   fmt.Sprintf("%#v", cred),
		"%s":    fmt.Sprintf("%s", cred.Token),
		"%q":    fmt.Sprintf("%q", cred.Token),
		"%x":    fmt.Sprintf("%x", cred.Token),
		"Error": Errorf(ErrUnauthenticated, "token %v rejected", cred.Token).Error(),
	}
	for name, out := range outputs {
		if strings.Contains(out, token) {
			t.Errorf("%s leaks the token: %s", name, out)
		}
		if name != "%x" && !strings.Contains(out, "REDACTED") {
			t.Errorf("%s does not show the redaction marker: %s", name, out)
		}
	}
	if cred.Token.Reveal() != token {
		t.Fatalf("Reveal = %q", cred.Token.Reveal())
	}
}

func TestReceiptAndOutcomeJSON(t *testing.T) {
	r := WriteReceipt{Metadata: json.RawMessage(`{"files":["a.parquet"]}`), RowCount: 3, ByteCount: 42}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{"files":["a.parquet"]},"row_count":3,"byte_count":42}`; string(b) != want {
		t.Fatalf("receipt JSON = %s, want %s", b, want)
	}
	var back WriteReceipt
	if err := json.Unmarshal(b, &back); err != nil || back.RowCount != 3 || string(back.Metadata) != `{"files":["a.parquet"]}` {
		t.Fatalf("round trip = %+v, %v", back, err)
	}

	at := time.Date(2026, 11, 29, 12, 30, 5, 0, time.FixedZone("x", 3600))
	o := CommitOutcome{SnapshotID: 7, CommittedAt: at, Retried: 2}
	b, err = json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"snapshot_id":7,"committed_at":"2026-11-29T11:30:05Z","retried":2}`; string(b) != want {
		t.Fatalf("outcome JSON = %s, want %s", b, want)
	}
	var o2 CommitOutcome
	if err := json.Unmarshal(b, &o2); err != nil || !o2.CommittedAt.Equal(at) || o2.Retried != 2 {
		t.Fatalf("outcome round trip = %+v, %v", o2, err)
	}
}

func TestErrorKinds(t *testing.T) {
	cause := errors.New("disk on fire")
	err := Errorf(ErrUnavailable, "table %s: write: %w", "c.n.t", cause)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, cause) {
		t.Fatalf("errors.Is fails for %v", err)
	}
	if err.Error() != "table c.n.t: write: disk on fire" {
		t.Fatalf("message = %q", err.Error())
	}
	if Kind(fmt.Errorf("outer: %w", err)) != ErrUnavailable {
		t.Fatal("Kind does not see through wrapping")
	}
	w := Wrap(ErrNotFound, cause, "table c.n.t")
	if w.Error() != "table c.n.t: disk on fire" || !errors.Is(w, ErrNotFound) {
		t.Fatalf("Wrap = %v", w)
	}
	if Wrap(ErrNotFound, nil, "x") != nil || Kind(cause) != nil {
		t.Fatal("nil handling")
	}
}

func TestTableIdentValidate(t *testing.T) {
	for _, tc := range []struct {
		id TableIdent
		ok bool
	}{
		{TableIdent{"c", []string{"n"}, "t"}, true},
		{TableIdent{"", []string{"n"}, "t"}, false},
		{TableIdent{"c", nil, "t"}, false},
		{TableIdent{"c", []string{"n"}, ""}, false},
		{TableIdent{"c", []string{""}, "t"}, false},
		{TableIdent{"c", []string{"n"}, "../x"}, false},
		{TableIdent{"c", []string{".."}, "t"}, false},
	} {
		err := tc.id.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%#v: err = %v", tc.id, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%#v: kind = %v", tc.id, err)
		}
	}
	if got := (TableIdent{"c", []string{"a", "b"}, "t"}).String(); got != "c.a.b.t" {
		t.Fatalf("String = %q", got)
	}
}
