package engine

import (
	"strings"
	"testing"
)

// TestParseCache: trees are kept by their whole text, the least recently
// used go first once the bytes are over the bound, and an entry above
// its bound is never kept.
func TestParseCache(t *testing.T) {
	pc := newParseCache(30, 12)
	pc.put("q1", "tree1") // 7 bytes
	pc.put("q2", "tree2")
	pc.put("q3", "tree3")
	if tree, ok := pc.get("q1"); !ok || tree != "tree1" { // q1 now the most recent
		t.Fatalf("q1: %q %v", tree, ok)
	}
	pc.put("q4", "tree4") // 28 bytes: all kept
	pc.put("q5", "tree5") // 35: the least recently used, q2, goes
	pc.put("big", strings.Repeat("x", 10))
	cases := []struct {
		query string
		want  bool
	}{
		{"q1", true}, {"q2", false}, {"q3", true}, {"q4", true}, {"q5", true},
		{"big", false}, {"q", false}, {"q1 ", false},
	}
	for _, c := range cases {
		if tree, ok := pc.get(c.query); ok != c.want || ok && tree != "tree"+c.query[1:] {
			t.Errorf("get(%q) = %q, %v; want kept %v", c.query, tree, ok, c.want)
		}
	}
	if pc.bytes > 30 {
		t.Errorf("cache holds %d bytes, bound 30", pc.bytes)
	}
	var none *parseCache
	none.put("q", "t")
	if _, ok := none.get("q"); ok {
		t.Error("a nil cache kept a tree")
	}
}
