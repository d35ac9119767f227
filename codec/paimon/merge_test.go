package paimon

import (
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	part := func(v int32) Row {
		r, err := BuildRow([]Type{{Kind: KindInt}}, []any{v})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	file := func(name string) DataFile { return DataFile{FileName: name} }
	msg := func(p int32, bucket int32, total *int32, files ...string) CommitMessage {
		m := CommitMessage{Partition: part(p), Bucket: bucket, TotalBuckets: total}
		for _, f := range files {
			m.Data.NewFiles = append(m.Data.NewFiles, file(f))
		}
		return m
	}
	four, eight := ptr(int32(4)), ptr(int32(8))
	idx := func(name string) CommitMessage {
		return CommitMessage{Partition: part(1), Data: DataIncrement{NewIndexFiles: []IndexFile{{FileName: name}}}}
	}
	tests := []struct {
		name    string
		batches [][]CommitMessage
		want    int
		err     string
	}{
		{"disjoint workers", [][]CommitMessage{{msg(1, 0, four, "a")}, {msg(1, 1, four, "b"), msg(2, 0, four, "a")}}, 3, ""},
		{"unknown total agrees with any", [][]CommitMessage{{msg(1, 0, nil, "a")}, {msg(1, 0, four, "b")}}, 2, ""},
		{"totals disagree", [][]CommitMessage{{msg(1, 0, four, "a")}, {msg(1, 0, eight, "b")}}, 0, "claims 8 total buckets"},
		{"same file twice", [][]CommitMessage{{msg(1, 0, four, "a")}, {msg(1, 0, four, "a")}}, 0, `data file "a" added twice`},
		{"same index twice", [][]CommitMessage{{idx("i")}, {idx("i")}}, 0, `index file "i" added twice`},
		{"nothing", nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.batches...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Fatalf("Merge = %d messages, %v; want %d", len(got), err, tt.want)
			}
		})
	}
}
