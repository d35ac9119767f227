package handlers

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRefuseNonInsertNamesStatements: every refusal names the statement
// kind; several statements are refused as such, whatever comes first.
func TestRefuseNonInsertNamesStatements(t *testing.T) {
	cases := []struct {
		q    string
		code codes.Code
		msg  string
	}{
		{`INSERT INTO t VALUES (1)`, codes.OK, ""},
		{`SELECT 1; ATTACH 'x' AS x`, codes.InvalidArgument, "multiple statements are not supported: SELECT; ATTACH"},
		{`INSERT INTO t VALUES (1); DROP TABLE t`, codes.InvalidArgument, "multiple statements are not supported: INSERT; DROP"},
		{`INSERT INTO t VALUES (';'); COPY t TO 'f'`, codes.InvalidArgument, "INSERT; COPY"},
		{`SHOW ALL TABLES`, codes.InvalidArgument, "SHOW is not supported"},
		{`DESCRIBE t`, codes.InvalidArgument, "DESCRIBE is not supported"},
		{`SUMMARIZE t`, codes.InvalidArgument, "SUMMARIZE is not supported"},
		{`SELECT 1`, codes.InvalidArgument, "SELECT is a query"},
		{`ATTACH 'x' AS x`, codes.Unimplemented, "ATTACH statements are not supported"},
		{`DELETE FROM t`, codes.Unimplemented, "DELETE statements are not supported"},
	}
	for _, c := range cases {
		err := refuseNonInsert(c.q)
		if status.Code(err) != c.code || !strings.Contains(status.Convert(err).Message(), c.msg) {
			t.Errorf("%s: %v, want %v naming %q", c.q, err, c.code, c.msg)
		}
	}
}
