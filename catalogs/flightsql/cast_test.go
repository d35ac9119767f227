package flightsql

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCastTo: upstream results are cast to the planned types, or refused
// naming the column.
func TestCastTo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to arrow.DataType
		json     string
		want     string // first value rendered, or "" for an error
		errWord  string
	}{
		{"large string", arrow.BinaryTypes.LargeString, arrow.BinaryTypes.String, `["a"]`, "a", ""},
		{"string view", arrow.BinaryTypes.StringView, arrow.BinaryTypes.String, `["v"]`, "v", ""},
		{"int32 count", arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, `[7]`, "7", ""},
		{"date64", arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Date32, `["2024-03-01"]`, "2024-03-01", ""},
		{"overflow", arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, `[9999999999]`, "", "does not convert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col, _, err := array.FromJSON(memory.DefaultAllocator, tc.from, strings.NewReader(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			defer col.Release()
			in := arrow.NewSchema([]arrow.Field{{Name: "c", Type: tc.from, Nullable: true}}, nil)
			rec := array.NewRecordBatch(in, []arrow.Array{col}, int64(col.Len()))
			defer rec.Release()
			src, _ := array.NewRecordReader(in, []arrow.RecordBatch{rec})
			r, err := castTo(src, arrow.NewSchema([]arrow.Field{{Name: "c", Type: tc.to, Nullable: true}}, nil), "test")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			ok := r.Next()
			switch {
			case tc.want != "" && (!ok || r.RecordBatch().Column(0).ValueStr(0) != tc.want || !arrow.TypeEqual(r.RecordBatch().Column(0).DataType(), tc.to)):
				t.Fatalf("cast %s -> %s: ok=%v err=%v", tc.from, tc.to, ok, r.Err())
			case tc.want == "" && (ok || r.Err() == nil || !strings.Contains(r.Err().Error(), `column "c"`) || !strings.Contains(r.Err().Error(), tc.errWord)):
				t.Fatalf("cast %s -> %s should fail naming the column: ok=%v err=%v", tc.from, tc.to, ok, r.Err())
			}
		})
	}
}

// TestParseConfigSecrets: a URI with credentials is refused without
// printing them, and a password never prints.
func TestParseConfigSecrets(t *testing.T) {
	if _, err := parseConfig(map[string]string{propURI: "grpc://u:hunter2@h:1"}); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("uri with credentials: %v", err)
	}
	c, err := parseConfig(map[string]string{propURI: "grpc+tls://h:1", propUser: "u", propPassword: "hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.Join([]string{c.password.String(), c.addr}, " "); strings.Contains(s, "hunter2") {
		t.Fatalf("secret printed: %s", s)
	}
	if _, err := parseConfig(map[string]string{propURI: "grpc://h:1", propUser: "u", propToken: "t"}); err == nil {
		t.Fatal("a user and a static token together were accepted")
	}
}
