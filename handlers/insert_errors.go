package handlers

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc/status"
)

// An INSERT's source runs wrapped in the gateway's own query (castQuery:
// SELECT CAST(__src.c0 AS BIGINT) AS id, ... FROM (source) AS __src(c0,
// ...)), so DuckDB's errors about it name that query: its alias, its
// column aliases and, in the "LINE 1:" context, its text. insertError
// restates them in the user's terms, naming the table and the column, so
// no internal name reaches a client (docs/sql.md).

var (
	// DuckDB's cast error, with the column alias it casts from.
	castFrom = regexp.MustCompile(`(?s)^Conversion Error: (.*?) when casting from source column c(\d+)$`)
	// The cast's value: "Could not convert string 'x' to INT64".
	convertValue = regexp.MustCompile(`(?s)^Could not convert (?:string )?(.*) to [A-Z0-9_]+$`)
	// An out-of-range value: "Type INT128 with value 1e30 can't be cast
	// because the value is out of range for the destination type INT64".
	outOfRange = regexp.MustCompile(`(?s)^Type \S+ with value (.*) can't be cast because the value is out of range for the destination type \S+$`)
	// Too few source columns for the alias list.
	aliasCount = regexp.MustCompile(`table "__src" has (\d+) columns available but (\d+) columns specified`)
	// A column alias, qualified or not.
	srcColumn = regexp.MustCompile(`\b(?:__src\.)?c(\d+)\b`)
)

// insertMessage is an error to a client about an INSERT, in the user's
// terms; it wraps the original, so its kind is kept.
type insertMessage struct {
	msg string
	err error
}

func (e *insertMessage) Error() string { return e.msg }
func (e *insertMessage) Unwrap() error { return e.err }

// insertError is err, from running or describing the INSERT into t,
// restated without the gateway's query: nil stays nil, a gRPC status is
// left as it is (it was written for the client).
func insertError(t *insertTable, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := dropContext(err.Error())
	table := t.ident.String()
	column := func(i string) string {
		n, _ := strconv.Atoi(i)
		if n < 0 || n >= len(t.fields) {
			return "a column"
		}
		f := t.fields[n]
		typ := sqlType(f.Type)
		if typ == "" {
			typ = f.Type.String()
		}
		return fmt.Sprintf("column %s (%s)", f.Name, typ)
	}
	switch m := castFrom.FindStringSubmatch(msg); {
	case m != nil:
		detail := m[1]
		if v := convertValue.FindStringSubmatch(detail); v != nil {
			detail = "could not convert " + v[1]
		} else if v := outOfRange.FindStringSubmatch(detail); v != nil {
			detail = "value " + v[1] + " is out of range"
		}
		msg = fmt.Sprintf("INSERT into %s: %s: %s", table, column(m[2]), detail)
	case aliasCount.MatchString(msg):
		m := aliasCount.FindStringSubmatch(msg)
		have, _ := strconv.Atoi(m[1])
		msg = fmt.Sprintf("INSERT has %s for %d columns of %s", values(have), len(t.fields), table)
	case strings.Contains(msg, "__src"):
		// None should be left; if one is, it reads as the table.
		msg = srcColumn.ReplaceAllStringFunc(msg, func(s string) string {
			return column(srcColumn.FindStringSubmatch(s)[1])
		})
		msg = strings.ReplaceAll(msg, "__src", table)
		msg = fmt.Sprintf("INSERT into %s: %s", table, msg)
	default:
		if !strings.Contains(msg, table) {
			msg = fmt.Sprintf("INSERT into %s: %s", table, msg)
		}
	}
	return &insertMessage{msg: msg, err: err}
}

// values is "1 value" or "n values".
func values(n int) string {
	if n == 1 {
		return "1 value"
	}
	return fmt.Sprintf("%d values", n)
}

// dropContext removes DuckDB's "LINE n: ..." context and its caret: they
// show the gateway's wrapping of the statement, not what the user wrote,
// and the caret would point at the wrong place.
func dropContext(msg string) string {
	lines := strings.Split(msg, "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "LINE ") {
			if i+1 < len(lines) && strings.Trim(lines[i+1], " ^") == "" {
				i++
			}
			continue
		}
		kept = append(kept, lines[i])
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}
