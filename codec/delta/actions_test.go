package delta

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseCommitValid(t *testing.T) {
	commit := strings.Join([]string{
		`{"commitInfo":{"timestamp":1,"operation":"WRITE","inCommitTimestamp":1700000000000,"x":{"nested":[1]}}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors","appendOnly"]}}`,
		`{"metaData":{"id":"af23","name":null,"format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":["p"],"configuration":{"delta.appendOnly":"true"},"futureField":7}}`,
		``,
		`{"add":{"path":"p=a%253Db/f.parquet","partitionValues":{"p":"a=b","q":null},"size":10,"modificationTime":2,"dataChange":true,"stats":"{\"numRecords\":1}","tags":null,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,"cardinality":6},"baseRowId":4071,"defaultRowCommitVersion":41}}`,
		`{"remove":{"path":"old.parquet","deletionTimestamp":3,"dataChange":true}}`,
		`{"txn":{"appId":"app","version":364475}}`,
		`{"domainMetadata":{"domain":"delta.x","configuration":"{}","removed":false}}`,
		`{"cdc":{"path":"_change_data/c.parquet","partitionValues":{},"size":5,"dataChange":false}}`,
		`{"someFutureAction":{"anything":true}}`,
		"\r",
	}, "\n")
	acts, err := ParseCommit("00000000000000000001.json", []byte(commit))
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 8 {
		t.Fatalf("%d actions, want 8 (the unknown action skipped)", len(acts))
	}
	if ts, ok := acts[0].CommitInfo.InCommitTimestamp(); !ok || ts != 1700000000000 {
		t.Errorf("inCommitTimestamp %d %v", ts, ok)
	}
	add := acts[3].Add
	if add.PartitionValues["q"] != nil || *add.PartitionValues["p"] != "a=b" || add.Tags != nil {
		t.Errorf("add partition values %v tags %v", add.PartitionValues, add.Tags)
	}
	if add.DeletionVector.UniqueID() != "uab^-aqEH.-t@S}K{vb[*k^@4" || *add.BaseRowID != 4071 {
		t.Errorf("add %+v", add)
	}
	if p, _ := DecodePath(add.Path); p != "p=a%3Db/f.parquet" {
		t.Errorf("decoded path %q", p)
	}
	if acts[2].MetaData.Name != nil || acts[2].MetaData.Configuration["delta.appendOnly"] != "true" {
		t.Errorf("metadata %+v", acts[2].MetaData)
	}

	// Encoding and decoding again gives the same actions.
	enc, err := EncodeCommit(acts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseCommit("re-encoded", enc)
	if err != nil {
		t.Fatalf("%v\n%s", err, enc)
	}
	if !reflect.DeepEqual(acts, again) {
		t.Errorf("round trip differs:\n%s", enc)
	}
	if lines := strings.Count(string(enc), "\n"); lines != len(acts) {
		t.Errorf("%d lines for %d actions", lines, len(acts))
	}
}

func TestParseCommitMalformed(t *testing.T) {
	cases := map[string]string{
		"not json":                  `{"add":`,
		"not an object":             `[1]`,
		"two actions on a line":     `{"txn":{"appId":"a","version":1},"remove":{"path":"x","dataChange":true}}`,
		"add without size":          `{"add":{"path":"x","partitionValues":{},"modificationTime":1,"dataChange":true}}`,
		"add without partitionVals": `{"add":{"path":"x","size":1,"modificationTime":1,"dataChange":true}}`,
		"add with empty path":       `{"add":{"path":"","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`,
		"add with negative size":    `{"add":{"path":"x","partitionValues":{},"size":-1,"modificationTime":1,"dataChange":true}}`,
		"size is a string":          `{"add":{"path":"x","partitionValues":{},"size":"1","modificationTime":1,"dataChange":true}}`,
		"size is fractional":        `{"add":{"path":"x","partitionValues":{},"size":1.5,"modificationTime":1,"dataChange":true}}`,
		"field name case differs":   `{"add":{"PATH":"x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`,
		"remove without dataChange": `{"remove":{"path":"x"}}`,
		"metaData without id":       `{"metaData":{"format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[],"configuration":{}}}`,
		"metaData null config":      `{"metaData":{"id":"i","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[],"configuration":null}}`,
		"metaData without format":   `{"metaData":{"id":"i","schemaString":"{}","partitionColumns":[],"configuration":{}}}`,
		"null partition column":     `{"metaData":{"id":"i","format":{"provider":"parquet"},"schemaString":"{}","partitionColumns":[null],"configuration":{}}}`,
		"protocol version 0":        `{"protocol":{"minReaderVersion":0,"minWriterVersion":2}}`,
		"reader 3 without list":     `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"writerFeatures":[]}}`,
		"writer 7 without list":     `{"protocol":{"minReaderVersion":1,"minWriterVersion":7}}`,
		"reader 3 writer 5":         `{"protocol":{"minReaderVersion":3,"minWriterVersion":5,"readerFeatures":[]}}`,
		"txn without version":       `{"txn":{"appId":"a"}}`,
		"domain without removed":    `{"domainMetadata":{"domain":"d","configuration":""}}`,
		"dv bad storage type":       `{"add":{"path":"x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"z","pathOrInlineDv":"","sizeInBytes":1,"cardinality":1}}}`,
		"inline dv with offset":     `{"add":{"path":"x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"00000","offset":1,"sizeInBytes":1,"cardinality":1}}}`,
		"dv short uuid":             `{"add":{"path":"x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"abc","sizeInBytes":1,"cardinality":1}}}`,
		"sidecar in a commit":       `{"sidecar":{"path":"s.parquet","sizeInBytes":1,"modificationTime":1}}`,
		"checkpointMetadata":        `{"checkpointMetadata":{"version":1}}`,
		"partition value a number":  `{"add":{"path":"x","partitionValues":{"p":1},"size":1,"modificationTime":1,"dataChange":true}}`,
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCommit("00000000000000000003.json", []byte(line))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), "00000000000000000003.json line 1") {
				t.Errorf("error %q does not name the file and line", err)
			}
		})
	}
}

func TestReconciliation(t *testing.T) {
	base := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors","domainMetadata"]}}
{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{}}}
{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
{"add":{"path":"b%20c.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
{"txn":{"appId":"x","version":5}}
{"domainMetadata":{"domain":"d1","configuration":"one","removed":false}}
{"domainMetadata":{"domain":"d2","configuration":"two","removed":false}}
`
	dv := `"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":1,"cardinality":1}`
	cases := []struct {
		name      string
		commits   []string
		files     []string // live paths, each with its dv unique id after '#'
		tombs     int
		txn       int64
		domains   []string
		wantError bool
	}{
		{name: "base", files: []string{"a.parquet#", "b%20c.parquet#"}, txn: 5, domains: []string{"d1", "d2"}},
		{name: "remove, then add again",
			commits: []string{`{"remove":{"path":"a.parquet","dataChange":true,"deletionTimestamp":5}}`,
				`{"add":{"path":"a.parquet","partitionValues":{},"size":2,"modificationTime":2,"dataChange":true}}`},
			files: []string{"a.parquet#", "b%20c.parquet#"}, txn: 5, domains: []string{"d1", "d2"}},
		{name: "a dv replaces the file's previous logical file in one commit",
			commits: []string{`{"remove":{"path":"a.parquet","dataChange":true}}` + "\n" +
				`{"add":{"path":"a.parquet","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true,` + dv + `}}`},
			files: []string{"a.parquet#uab^-aqEH.-t@S}K{vb[*k^@1", "b%20c.parquet#"}, tombs: 1, txn: 5, domains: []string{"d1", "d2"}},
		{name: "remove by the encoded path matches the decoded one",
			commits: []string{`{"remove":{"path":"b%20c.parquet","dataChange":true}}`},
			files:   []string{"a.parquet#"}, tombs: 1, txn: 5, domains: []string{"d1", "d2"}},
		{name: "remove with another dv leaves the file",
			commits: []string{`{"remove":{"path":"a.parquet","dataChange":true,` + dv + `}}`},
			files:   []string{"a.parquet#", "b%20c.parquet#"}, tombs: 1, txn: 5, domains: []string{"d1", "d2"}},
		{name: "txn latest wins, domain tombstone",
			commits: []string{`{"txn":{"appId":"x","version":3}}` + "\n" + `{"domainMetadata":{"domain":"d1","configuration":"one","removed":true}}`},
			files:   []string{"a.parquet#", "b%20c.parquet#"}, txn: 3, domains: []string{"d2"}},
		{name: "the same path added twice in a commit",
			commits: []string{`{"add":{"path":"z","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}` + "\n" +
				`{"add":{"path":"z","partitionValues":{},"size":2,"modificationTime":1,"dataChange":true}}`},
			wantError: true},
		{name: "two metaData actions in a commit",
			commits:   []string{strings.Split(base, "\n")[1] + "\n" + strings.Split(base, "\n")[1]},
			wantError: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := memLog{CommitName(0): []byte(base)}
			for i, cm := range c.commits {
				m[CommitName(int64(i+1))] = []byte(cm)
			}
			s, err := Load(t.Context(), m, -1)
			if c.wantError {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("%v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, f := range s.Files {
				files = append(files, f.Path+"#"+f.DeletionVector.UniqueID())
			}
			if !reflect.DeepEqual(files, c.files) {
				t.Errorf("files %v, want %v", files, c.files)
			}
			if len(s.Tombstones) != c.tombs {
				t.Errorf("%d tombstones, want %d", len(s.Tombstones), c.tombs)
			}
			if s.Txns["x"].Version != c.txn {
				t.Errorf("txn %d, want %d", s.Txns["x"].Version, c.txn)
			}
			var doms []string
			for d := range s.Domains {
				doms = append(doms, d)
			}
			if !reflect.DeepEqual(sortedCopy(doms), c.domains) {
				t.Errorf("domains %v, want %v", doms, c.domains)
			}
		})
	}
}

func TestLoadGapsAndVersions(t *testing.T) {
	m := loadDirLog(t, "appends")
	if _, err := Load(t.Context(), m, 7); !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("version 7 of 3: %v", err)
	}
	delete(m, CommitName(1))
	if _, err := Load(t.Context(), m, -1); !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("gap at 1: %v", err)
	}
	if _, err := Load(t.Context(), memLog{}, -1); !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("empty log: %v", err)
	}
	// A hostile name claiming a huge version does not make replay walk to it.
	m = loadDirLog(t, "appends")
	m["09000000000000000000.checkpoint.0000000001.0000000002.parquet"] = []byte("x")
	if s, err := Load(t.Context(), m, -1); err != nil || s.Version != 2 {
		t.Errorf("with an incomplete far checkpoint: %v %v", s, err)
	}
}

func TestLastCheckpointChecksum(t *testing.T) {
	// The protocol's canonicalization example.
	ex := `{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}`
	sum, err := canonicalChecksum([]byte(ex))
	if err != nil || sum != "6a92d155a59bf2eecbd4b4ec7fd1f875" {
		t.Fatalf("checksum %s %v, want 6a92d155a59bf2eecbd4b4ec7fd1f875", sum, err)
	}
	good := `{"version":9,"size":13,"checksum":"` + mustSum(t, `{"version":9,"size":13}`) + `"}`
	if lc, err := ParseLastCheckpoint([]byte(good)); err != nil || lc.Version != 9 {
		t.Errorf("valid checksum: %v", err)
	}
	for name, b := range map[string]string{
		"wrong checksum": `{"version":9,"size":13,"checksum":"00000000000000000000000000000000"}`,
		"duplicate key":  `{"version":9,"version":9,"size":13,"checksum":"x"}`,
		"no version":     `{"size":13}`,
		"not json":       `{`,
	} {
		if _, err := ParseLastCheckpoint([]byte(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

func mustSum(t *testing.T, s string) string {
	sum, err := canonicalChecksum([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
