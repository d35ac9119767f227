package delta

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// cachedLog is a memLog that keeps replayed states (StateCache) and
// counts the files Load reads.
type cachedLog struct {
	memLog
	kept  *Replayed
	reads int
}

func (c *cachedLog) Read(ctx context.Context, name string) ([]byte, error) {
	c.reads++
	return c.memLog.Read(ctx, name)
}

func (c *cachedLog) ReplayedState() *Replayed { return c.kept }

func (c *cachedLog) KeepReplayedState(r *Replayed) {
	if c.kept == nil || c.kept.Version() < r.Version() {
		c.kept = r
	}
}

func (c *cachedLog) DropReplayedState() { c.kept = nil }

// tableLog is the log of a table with id and commits 1..n: commit v adds
// f<v>, commit 4 removes f2, commit 3 records a txn.
func tableLog(id string, n int) memLog {
	m := memLog{}
	m[CommitName(0)] = []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"` + id + `","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}}
`)
	for v := 1; v <= n; v++ {
		addCommit(m, v)
	}
	return m
}

func addCommit(m memLog, v int) {
	c := fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":"WRITE"}}
{"add":{"path":"f%d.parquet","partitionValues":{},"size":10,"modificationTime":%d,"dataChange":true}}
`, v, v, v)
	switch v {
	case 3:
		c += `{"txn":{"appId":"app","version":3}}` + "\n"
	case 4:
		c += `{"remove":{"path":"f2.parquet","deletionTimestamp":4,"dataChange":true}}` + "\n"
	}
	m[CommitName(int64(v))] = []byte(c)
}

// snapshotOf is what a snapshot says, for comparison with a full replay.
func snapshotOf(s *Snapshot) map[string]any {
	var files, tombs []string
	for _, f := range s.Files {
		files = append(files, f.Path)
	}
	for _, r := range s.Tombstones {
		tombs = append(tombs, r.Path)
	}
	op := ""
	if s.CommitInfo != nil {
		op, _ = s.CommitInfo.String("operation")
	}
	return map[string]any{"version": s.Version, "id": s.Metadata.ID, "files": files, "tombstones": tombs,
		"txns": s.Txns, "commitInfo": op, "checkpoint": s.Checkpoint}
}

// TestStateCache: with a Log that keeps states, a second Load of the
// same version reads no file and returns the same snapshot, a Load one
// commit later reads only that commit, and each answers what a full
// replay answers; the kept state is not changed by the commits applied
// after it (time travel to it still answers it), and a table created
// again at the location with fewer versions is replayed from its own
// log, also once it has grown past the version kept.
func TestStateCache(t *testing.T) {
	ctx := context.Background()
	l := &cachedLog{memLog: tableLog("t1", 5)}
	full := func(version int64) map[string]any {
		t.Helper()
		s, err := Load(ctx, l.memLog, version)
		if err != nil {
			t.Fatal(err)
		}
		return snapshotOf(s)
	}
	load := func(version int64) *Snapshot {
		t.Helper()
		l.reads = 0
		s, err := Load(ctx, l, version)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := snapshotOf(s), full(version); !reflect.DeepEqual(got, want) {
			t.Fatalf("Load(%d) with the cache = %v, a full replay %v", version, got, want)
		}
		return s
	}
	s5 := load(-1)
	want5 := snapshotOf(s5)
	if again := load(-1); again != s5 || l.reads != 0 {
		t.Errorf("the second Load of version 5 read %d files (same snapshot: %v), want 0", l.reads, again == s5)
	}
	addCommit(l.memLog, 6)
	if s6 := load(-1); s6.Version != 6 || l.reads != 1 {
		t.Errorf("Load after commit 6: version %d, %d files read, want 6 and 1 (the new commit)", s6.Version, l.reads)
	}
	if got := snapshotOf(s5); !reflect.DeepEqual(got, want5) {
		t.Errorf("the snapshot of version 5 changed once 6 was applied: %v, was %v", got, want5)
	}
	load(5)
	load(2)

	l.memLog = tableLog("t2", 2)
	if s := load(-1); s.Version != 2 || s.Metadata.ID != "t2" {
		t.Errorf("the table created again: version %d of table %q, want 2 of t2", s.Version, s.Metadata.ID)
	}
	// Grown past the version the first table's state was kept at, it is
	// still replayed from its own log.
	for v := 3; v <= 7; v++ {
		addCommit(l.memLog, v)
	}
	if s := load(-1); s.Version != 7 || s.Metadata.ID != "t2" {
		t.Errorf("the table created again, at 7: version %d of table %q, want 7 of t2", s.Version, s.Metadata.ID)
	}
}
