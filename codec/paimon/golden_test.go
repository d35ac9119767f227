package paimon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The golden fixtures in testdata/ are written by Paimon Java (integration/paimon-java,
// `make paimon-fixtures`): vN_CASE.bin is CommitMessageSerializer.serializeList at
// version N, vN_CASE.json describes it in this package's JSON model.

type fixture struct {
	name    string
	version int
	bin     []byte
	doc     *Document
	raw     []byte
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	bins, err := filepath.Glob("testdata/v*.bin")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bins)
	var out []fixture
	for _, b := range bins {
		bin, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(strings.TrimSuffix(b, ".bin") + ".json")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := ReadDocument(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		out = append(out, fixture{name: filepath.Base(b), version: doc.Version, bin: bin, doc: doc, raw: raw})
	}
	if len(out) == 0 {
		t.Fatal("no golden fixtures in testdata/")
	}
	return out
}

// describe renders messages as the fixture JSON would, typing rows as want types them.
func describe(t testing.TB, version int, msgs []CommitMessage, want *Document) []byte {
	t.Helper()
	got := ToDocument(version, msgs)
	gr, wr := got.Rows(), want.Rows()
	if len(gr) != len(wr) {
		t.Fatalf("%d rows, want %d", len(gr), len(wr))
	}
	for i := range gr {
		if err := gr[i].Annotate(wr[i].Types); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonDiff compares two JSON documents field by field and returns the first difference
// by path; numbers compare by value, and the top-level description is ignored.
func jsonDiff(want, got []byte) string {
	var w, g any
	for _, p := range []struct {
		b []byte
		v *any
	}{{want, &w}, {got, &g}} {
		d := json.NewDecoder(bytes.NewReader(p.b))
		d.UseNumber()
		if err := d.Decode(p.v); err != nil {
			return err.Error()
		}
	}
	if m, ok := w.(map[string]any); ok {
		delete(m, "description")
	}
	if m, ok := g.(map[string]any); ok {
		delete(m, "description")
	}
	return diffValue("", w, g)
}

func diffValue(path string, w, g any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %v", path, g)
		}
		keys := make([]string, 0, len(wv))
		for k := range wv {
			keys = append(keys, k)
		}
		for k := range gv {
			if _, ok := wv[k]; !ok {
				return fmt.Sprintf("%s/%s: unexpected field", path, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, ok := gv[k]; !ok {
				return fmt.Sprintf("%s/%s: missing", path, k)
			}
			if d := diffValue(path+"/"+k, wv[k], gv[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			return fmt.Sprintf("%s: want %v, got %v", path, w, g)
		}
		for i := range wv {
			if d := diffValue(fmt.Sprintf("%s/%d", path, i), wv[i], gv[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		gv, ok := g.(json.Number)
		if ok {
			a, ok1 := new(big.Rat).SetString(wv.String())
			b, ok2 := new(big.Rat).SetString(gv.String())
			if ok1 && ok2 && a.Cmp(b) == 0 {
				return ""
			}
		}
		return fmt.Sprintf("%s: want %v, got %v", path, w, g)
	}
	if w != g {
		return fmt.Sprintf("%s: want %v, got %v", path, w, g)
	}
	return ""
}

// TestGoldenDecode decodes every Java fixture and compares it field by field with the
// JSON Java wrote.
func TestGoldenDecode(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			msgs, err := DecodeList(f.version, f.bin)
			if err != nil {
				t.Fatal(err)
			}
			if d := jsonDiff(f.raw, describe(t, f.version, msgs, f.doc)); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestGoldenReencode re-encodes every Java fixture at its version and expects Java's
// bytes exactly, both from the decoded messages and from the JSON description.
func TestGoldenReencode(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			in := append([]byte(nil), f.bin...)
			msgs, err := DecodeList(f.version, in)
			if err != nil {
				t.Fatal(err)
			}
			clear(in) // the result must not alias its input
			got, err := EncodeList(f.version, msgs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, f.bin) {
				t.Fatalf("re-encoded %d bytes differ from Java's %d at byte %d", len(got), len(f.bin), firstDiff(got, f.bin))
			}
			fromJSON, err := f.doc.ToMessages()
			if err != nil {
				t.Fatal(err)
			}
			got, err = EncodeList(f.version, fromJSON)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, f.bin) {
				t.Fatalf("encoded from JSON: %d bytes differ from Java's %d at byte %d", len(got), len(f.bin), firstDiff(got, f.bin))
			}
		})
	}
}

// TestGoldenRowsFromValues rebuilds every typed row of the fixtures from its typed values
// alone and expects Java's bytes: the row writer lays values out as Paimon does.
func TestGoldenRowsFromValues(t *testing.T) {
	n := 0
	for _, f := range loadFixtures(t) {
		for i, r := range f.doc.Rows() {
			if r.Types == nil {
				continue
			}
			vals := *r
			vals.Hex = ""
			row, err := vals.row()
			if err != nil {
				t.Fatalf("%s row %d: %v", f.name, i, err)
			}
			if got := fmt.Sprintf("%x", row.Bytes()); got != r.Hex {
				t.Errorf("%s row %d (%v):\n got %s\nwant %s", f.name, i, r.Types, got, r.Hex)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no typed rows in the fixtures")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
