package engine

import (
	"strings"
	"testing"
)

func TestStatementKinds(t *testing.T) {
	cases := map[string]string{
		`SELECT 1`:                             "SELECT",
		`SELECT 1;`:                            "SELECT",
		`SELECT 1; ATTACH 'x'`:                 "SELECT; ATTACH",
		`SELECT ';' ; DROP TABLE t`:            "SELECT; DROP",
		`SELECT "a;b" FROM t; -- ; x`:          "SELECT",
		`/* ; /* nested ; */ ; */ SELECT 1; ;`: "SELECT",
		`SELECT E'\'; x'; COPY t TO 'f'`:       "SELECT; COPY",
		`SELECT $$;$$, $t$ ; $t$; LOAD x`:      "SELECT; LOAD",
		`SELECT $1; SET x = 1`:                 "SELECT; SET",
		`(SELECT 1); PRAGMA version`:           "SELECT; PRAGMA",
		`SELECT 'it''s; fine'`:                 "SELECT",
	}
	for q, want := range cases {
		if got := strings.Join(StatementKinds(q), "; "); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
}
