//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// TestParameterTypes: the parameter types docs/sql.md lists as inferred
// are; a parameter whose type cannot be inferred is refused
// InvalidArgument naming it, not with DuckDB's "Unsupported Arrow type
// UNKNOWN".
func TestParameterTypes(t *testing.T) {
	f := newFixture(t)
	for q, want := range map[string]string{
		`SELECT id FROM sales WHERE region = ? AND ? < qty`:    "utf8,int32",
		`SELECT id FROM sales WHERE region IN (?, ?)`:          "utf8,utf8",
		`SELECT id FROM sales WHERE id BETWEEN ? AND ?`:        "int64,int64",
		`SELECT CAST(? AS DATE), ?::DECIMAL(10,2)`:             "date32,decimal(10, 2)",
		`SELECT upper(?), coalesce(?, region) FROM sales`:      "utf8,utf8",
		`SELECT id FROM sales ORDER BY id LIMIT ? OFFSET ?`:    "int64,int64",
		`SELECT id FROM sales WHERE id > ? + 1 AND region = ?`: "",
	} {
		d, err := f.eng.Describe(context.Background(), q, f.resolve)
		if want == "" {
			if err == nil {
				t.Errorf("%s: described", q)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		var got []string
		for _, p := range d.Params.Fields() {
			got = append(got, p.Type.String())
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s: parameter types %v, want %s", q, got, want)
		}
	}
	for q, want := range map[string]string{
		`SELECT ? + 1`:                         "parameter $1 (placeholder 1) cannot be inferred",
		`SELECT ?::INT, ?`:                     "parameter $2 (placeholder 2) cannot be inferred",
		`SELECT id FROM sales WHERE ? IS NULL`: "parameter $1",
	} {
		_, err := f.eng.Describe(context.Background(), q, f.resolve)
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(fmtErr(err), want) || strings.Contains(fmtErr(err), "UNKNOWN") {
			t.Errorf("%s: %v, want InvalidArgument naming %q", q, err, want)
		}
	}
}

// TestErrorsHidePrivateViews: an error DuckDB reports over the rewritten
// query names the tables as the query wrote them, never a private view,
// by every entry point, and keeps its kind.
func TestErrorsHidePrivateViews(t *testing.T) {
	f := newFixture(t)
	params := batch(t, arrow.NewSchema([]arrow.Field{{Name: "$1", Type: arrow.PrimitiveTypes.Int64}}, nil), `[{"$1": 1}]`)
	defer params.Release()
	for _, q := range []string{
		`SELECT nosuch FROM sales AS t`,
		`SELECT s.id FROM sales s JOIN lake."default".regions r ON region = region`,
		`SELECT id FROM sales WHERE id = ? AND manager = 'x'`,
	} {
		_, derr := f.eng.Describe(context.Background(), q, f.resolve)
		_, qerr := f.eng.Query(context.Background(), q, params, f.resolve)
		for _, err := range []error{derr, qerr} {
			msg := fmtErr(err)
			if !errors.Is(err, catalogs.ErrInvalidArgument) || strings.Contains(msg, privatePrefix) || !strings.Contains(msg, "Binder Error") {
				t.Errorf("%s: %q", q, msg)
			}
		}
	}
	got := (&Engine{}).publicText(nil, "FROM __flightgw_0123456789abcdef_12 AS x")
	if got != "FROM a table AS x" {
		t.Errorf("an unknown private view: %q", got)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
