package handlers

import (
	"strings"
	"testing"
)

func TestParseInsert(t *testing.T) {
	cases := []struct {
		sql                          string
		catalog, schema, table, cols string
		source                       string
		placeholders                 int
		err                          string
	}{
		{sql: `INSERT INTO t VALUES (1, 'a')`, table: "t", source: `VALUES (1, 'a')`},
		{sql: `insert into "default".t (a, "B c") values (?, ?)`, schema: "default", table: "t", cols: "a,B c",
			source: `values (?, ?)`, placeholders: 2},
		{sql: `INSERT INTO lake."my ""x""".t SELECT * FROM s;`, catalog: "lake", schema: `my "x"`, table: "t", source: `SELECT * FROM s`},
		{sql: `INSERT INTO t (SELECT 1)`, table: "t", source: `(SELECT 1)`},
		{sql: "-- c\nINSERT /* x */ INTO t VALUES (?)", table: "t", source: `VALUES (?)`, placeholders: 1},
		{sql: `INSERT INTO t VALUES (?, 1)`, table: "t", source: `VALUES (?, 1)`},
		{sql: `INSERT INTO t VALUES (?), (?)`, table: "t", source: `VALUES (?), (?)`},
		{sql: `INSERT t VALUES (1)`, err: "INTO"},
		{sql: `INSERT INTO a.b.c.d VALUES (1)`, err: "too many"},
		{sql: `INSERT INTO t (a VALUES (1)`, err: "column list"},
		{sql: `INSERT INTO t`, err: "no VALUES"},
		{sql: `INSERT INTO "t VALUES (1)`, err: "unterminated"},
	}
	for _, c := range cases {
		st, err := parseInsert(c.sql)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.sql, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if st.catalog != c.catalog || st.schema != c.schema || st.table != c.table || strings.Join(st.columns, ",") != c.cols ||
			st.source != c.source || st.placeholders != c.placeholders {
			t.Errorf("%s: got %+v", c.sql, st)
		}
	}
}

// FuzzParseInsert: no statement makes the INSERT parser panic.
func FuzzParseInsert(f *testing.F) {
	for _, s := range []string{`INSERT INTO t VALUES (1)`, `INSERT INTO "a"."b" (x, "y") VALUES (?, ?)`, `INSERT INTO t (`, `INSERT INTO "`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseInsert(s)
		if err == nil && (st.table == "" || st.source == "") {
			t.Fatalf("%q parsed without a table or a source: %+v", s, st)
		}
	})
}
