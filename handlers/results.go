package handlers

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// flightInfoFor answers GetFlightInfo for a metadata command: one endpoint
// whose ticket is the command itself, served by this gateway.
func flightInfoFor(desc *flight.FlightDescriptor, schema *arrow.Schema, alloc memory.Allocator) *flight.FlightInfo {
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(schema, alloc),
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// rowsResult turns small metadata rows (JSON objects keyed by column name)
// into a one-batch stream. Metadata results are a few rows per table or
// type, so building them whole is fine.
func rowsResult(alloc memory.Allocator, schema *arrow.Schema, rows []map[string]any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, nil, err
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	rec, _, err := array.RecordFromJSON(alloc, schema, &buf)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: rec}
	close(ch)
	return schema, ch, nil
}

// likePattern compiles a SQL LIKE pattern (% any run, _ one character, \
// escapes) into a matcher. A nil pattern matches everything.
func likePattern(p *string) (func(string) bool, error) {
	if p == nil {
		return func(string) bool { return true }, nil
	}
	var re strings.Builder
	re.WriteString("^")
	esc := false
	for _, r := range *p {
		switch {
		case esc:
			re.WriteString(regexp.QuoteMeta(string(r)))
			esc = false
		case r == '\\':
			esc = true
		case r == '%':
			re.WriteString("(?s:.*)")
		case r == '_':
			re.WriteString("(?s:.)")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, err
	}
	return rx.MatchString, nil
}
