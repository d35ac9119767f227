package delta

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAssignAndCheckColumnMapping(t *testing.T) {
	s, err := ParseSchema(`{"type":"struct","fields":[
		{"name":"a","type":"long","nullable":true,"metadata":{}},
		{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
		{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"y","type":"string","nullable":true,"metadata":{}}]},"valueContainsNull":true},"nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckColumnMapping(s, "name"); err == nil {
		t.Fatal("a schema without physical names passes the name-mode check")
	}
	if err := CheckColumnMapping(s, "none"); err != nil {
		t.Fatal(err)
	}
	if n := AssignColumnMapping(s); n != 5 {
		t.Errorf("max id %d, want 5 (a s s.x m m.value.y)", n)
	}
	for _, mode := range []string{"name", "id"} {
		if err := CheckColumnMapping(s, mode); err != nil {
			t.Errorf("mode %s: %v", mode, err)
		}
	}
	y := s.Fields[2].Type.(*MapType).ValueType.(*StructType).Fields[0]
	if id, ok, _ := y.ColumnMappingID(); !ok || id != 5 {
		t.Errorf("m.value.y id %d %t, want 5", id, ok)
	}
	for name, mutate := range map[string]func(){
		"duplicate physical name": func() {
			y.Metadata[MetaColumnMappingPhysicalName] = s.Fields[0].Metadata[MetaColumnMappingPhysicalName]
		},
		"duplicate id":     func() { y.Metadata[MetaColumnMappingID] = json.RawMessage("1") },
		"no id in id mode": func() { delete(y.Metadata, MetaColumnMappingID) },
	} {
		saved := map[string]json.RawMessage{}
		for k, v := range y.Metadata {
			saved[k] = v
		}
		mutate()
		if err := CheckColumnMapping(s, "id"); err == nil || !strings.Contains(err.Error(), "m.value.y") {
			t.Errorf("%s: %v, want an error naming m.value.y", name, err)
		}
		y.Metadata = saved
	}
	if err := CheckColumnMapping(s, "both"); err == nil {
		t.Error("mode both accepted")
	}
}

func TestNextInCommitTimestamp(t *testing.T) {
	ci := func(ts int64) *CommitInfo { c := &CommitInfo{}; c.SetInCommitTimestamp(ts); return c }
	for _, tc := range []struct {
		prev     *CommitInfo
		now, out int64
	}{
		{nil, 100, 100},
		{&CommitInfo{}, 100, 100},
		{ci(50), 100, 100},
		{ci(100), 100, 101},
		{ci(500), 100, 501},
	} {
		if got := NextInCommitTimestamp(tc.prev, tc.now); got != tc.out {
			t.Errorf("after %v at %d: %d, want %d", tc.prev, tc.now, got, tc.out)
		}
	}
}
