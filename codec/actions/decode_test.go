package actions

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestDecodeStrict: keys are matched exactly and once, at every level;
// what encoding/json alone accepts by folding case or keeping the last
// duplicate is refused naming the key.
func TestDecodeStrict(t *testing.T) {
	for _, c := range []struct {
		name, body, says string // says "" : accepted
	}{
		{"plain", `{"commit_id": "j", "tables": [{"catalog": "c", "schema": "s", "table": "t", "payloads": ["AA=="]}]}`, ""},
		{"null tables", `{"commit_id": "j", "tables": null}`, ""},
		{"case-folded key", `{"COMMIT_ID": "j", "tables": []}`, `"COMMIT_ID" (keys are case-sensitive: "commit_id")`},
		{"duplicate key", `{"commit_id": "a", "commit_id": "b", "tables": []}`, `key "commit_id" is given twice`},
		{"unknown key", `{"commit_id": "j", "tabels": []}`, `unknown key "tabels"`},
		{"nested case-folded key", `{"commit_id": "j", "tables": [{"Table": "t"}]}`, `"tables[0].Table"`},
		{"nested duplicate key", `{"commit_id": "j", "tables": [{"table": "t"}, {"table": "t", "table": "u"}]}`, `"tables[1].table" is given twice`},
		{"nested unknown key", `{"commit_id": "j", "tables": [{"tabel": "t"}]}`, `"tables[0].tabel"`},
		{"trailing data", `{"commit_id": "j"} {}`, "trailing"},
		{"not an object", `[1]`, "cannot unmarshal"},
		{"truncated", `{"commit_id": "j"`, "unexpected EOF"},
		{"empty", ``, "not a JSON object"},
		{"wrong type", `{"commit_id": 1}`, "cannot unmarshal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var req CommitRequest
			err := Decode([]byte(c.body), &req)
			switch {
			case c.says == "" && err != nil:
				t.Fatalf("Decode(%s) = %v, want accepted", c.body, err)
			case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
				t.Fatalf("Decode(%s) = %v, want an error saying %s", c.body, err, c.says)
			}
		})
	}
	var st StatusRequest
	if err := Decode([]byte(`{"catalog": "c", "schema": "s", "table": "t", "commit_id": "j"}`), &st); err != nil ||
		st.Table != "t" || st.CommitID != "j" {
		t.Fatalf("StatusRequest (embedded TableRef): %+v, %v", st, err)
	}
}

// FuzzDecode: Decode never panics, and what it accepts decodes as
// encoding/json decodes it.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"commit_id": "j", "tables": [{"catalog": "c", "payloads": ["AA=="]}]}`,
		`{"COMMIT_ID": "j"}`, `{"commit_id": "a", "commit_id": "b"}`, `{"tables": [{"table": {"x": [1]}}]}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got CommitRequest
		if Decode(body, &got) != nil {
			return
		}
		var want CommitRequest
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("Decode accepted %q, encoding/json refuses it: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %+v, encoding/json %+v", body, got, want)
		}
	})
}

// TestDecodeDeep: a body nested far deeper than any request type is
// refused at the cost of encoding/json's own depth limit, not with memory
// (or stack) growing with its nesting.
func TestDecodeDeep(t *testing.T) {
	const depth = 1 << 20
	for _, body := range []string{
		`{"commit_id": ` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`,
		`{"tables": [{"payloads": [` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `]}]}`,
	} {
		var req CommitRequest
		var before, after runtime.MemStats
		b := []byte(body)
		runtime.ReadMemStats(&before)
		err := Decode(b, &req)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%.40s... nested %d deep: accepted", body, depth)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%.40s... nested %d deep: %d bytes allocated to refuse it", body, depth, n)
		}
	}
}
