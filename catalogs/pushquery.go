package catalogs

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// QueryPusher is implemented by backends that run SQL themselves (a
// database such as StarRocks, not files). When every table a query reads
// is in one catalog whose backend is a QueryPusher, and the query is
// written in SQL that means the same in the engine's dialect and in
// portable SQL (engine/pushquery.go says which), the engine hands the
// query to the backend whole instead of scanning each table into its
// own engine.
type QueryPusher interface {
	// PushQuery runs q and streams its result in q.Schema, the engine's
	// typing of the query, which the client was told: each result column,
	// by position, converted to its field's type. A result with another
	// number of columns is an error.
	PushQuery(ctx context.Context, q PushedQuery) (array.RecordReader, error)
}

// PushedQuery is a query handed to a backend whole: its text with every
// table reference cut out, for the backend to write each table its own
// way (its database and quoting).
type PushedQuery struct {
	// Fragments are the text around the table references: the query is
	// Fragments[0], Tables[0], Fragments[1], ..., Tables[n-1],
	// Fragments[n].
	Fragments []string
	// Tables are the resolved tables, in the order they are written.
	Tables []TableIdent
	// Schema is the result's Arrow schema.
	Schema *arrow.Schema
}

// Render writes the query with each table written by name.
func (q PushedQuery) Render(name func(TableIdent) (string, error)) (string, error) {
	var b strings.Builder
	for i, f := range q.Fragments {
		b.WriteString(f)
		if i < len(q.Tables) {
			n, err := name(q.Tables[i])
			if err != nil {
				return "", err
			}
			b.WriteString(n)
		}
	}
	return b.String(), nil
}
