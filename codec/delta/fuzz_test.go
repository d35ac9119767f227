package delta

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Fuzz targets for every decoder of bytes another process wrote. Each must return an
// error, never panic or allocate beyond what its input (and the caller's bound) allows;
// where an encoder exists, what decodes must encode and decode to the same value.

func fixtureFiles(f *testing.F, pattern string) [][]byte {
	paths, _ := filepath.Glob(filepath.Join("testdata/tables", pattern))
	var out [][]byte
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		f.Fatalf("no fixtures match %s", pattern)
	}
	return out
}

func FuzzParseCommit(f *testing.F) {
	for _, b := range fixtureFiles(f, "*/_delta_log/*.json") {
		f.Add(b)
	}
	f.Add([]byte(`{"add":{"path":"x","partitionValues":{"p":null},"size":1,"modificationTime":1,"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"00000","sizeInBytes":4,"cardinality":0}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		acts, err := ParseCommit("fuzz.json", data)
		if err != nil {
			return
		}
		enc, err := EncodeCommit(acts)
		if err != nil {
			t.Fatalf("decoded actions do not encode: %v", err)
		}
		again, err := ParseCommit("re-encoded", enc)
		if err != nil {
			t.Fatalf("re-encoded commit does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(acts, again) {
			t.Fatalf("round trip differs:\n%s", enc)
		}
	})
}

func FuzzReplay(f *testing.F) {
	commits := fixtureFiles(f, "replace/_delta_log/*.json")
	f.Add(commits[0], commits[1])
	f.Add(commits[0], []byte(`{"remove":{"path":"x","dataChange":true}}`))
	f.Fuzz(func(t *testing.T, c0, c1 []byte) {
		s, err := Load(context.Background(), memLog{CommitName(0): c0, CommitName(1): c1}, -1)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, a := range s.Files {
			p, err := DecodePath(a.Path)
			if err != nil || seen[p] {
				t.Fatalf("live files hold %q twice or undecodable (%v)", a.Path, err)
			}
			seen[p] = true
		}
	})
}

func FuzzParseCheckpointParquet(f *testing.F) {
	for _, b := range fixtureFiles(f, "*/_delta_log/*.checkpoint.parquet") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseCheckpointParquet(context.Background(), "fuzz.parquet", data)
	})
}

func FuzzParseSchema(f *testing.F) {
	f.Add(fullSchema)
	for _, b := range fixtureFiles(f, "*/_delta_log/00000000000000000000.json") {
		if acts, err := ParseCommit("seed", b); err == nil {
			for _, a := range acts {
				if a.MetaData != nil {
					f.Add(a.MetaData.SchemaString)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseSchema(s)
		if err != nil {
			return
		}
		_, _ = ArrowSchema(st, PhysicalNames)
		enc, err := st.SchemaString()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseSchema(enc)
		if err != nil {
			t.Fatalf("re-encoded schema does not parse: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(st, again) {
			t.Fatalf("schema round trip differs:\n%s", enc)
		}
	})
}

func FuzzDecodeBitmapArray(f *testing.F) {
	f.Add(portable(map[uint32][]byte{0: encodeRoaring32(map[uint16][]uint16{0: {1, 5, 9}, 3: seq(0, 100)}, map[uint16]string{3: "run"})}))
	f.Add(portable(map[uint32][]byte{1: encodeRoaring32(map[uint16][]uint16{0: seq(0, 5000)}, map[uint16]string{0: "bitmap"})}))
	f.Add([]byte{0xd0, 0xd3, 0x39, 0x64, 1, 0, 0, 0, 28, 0, 0, 0, 0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 5, 0, 16, 0, 0, 0, 3, 0, 4, 0, 7, 0, 11, 0, 18, 0, 29, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		const bound = 1 << 16
		rows, err := DecodeBitmapArray(data, bound)
		if err != nil {
			return
		}
		if len(rows) > bound {
			t.Fatalf("%d rows past the bound", len(rows))
		}
		for i := 1; i < len(rows); i++ {
			if rows[i] <= rows[i-1] {
				t.Fatalf("rows not ascending at %d", i)
			}
		}
	})
}

func FuzzStoredBitmap(f *testing.F) {
	bm := portable(map[uint32][]byte{0: encodeRoaring32(map[uint16][]uint16{0: {7}}, nil)})
	file, offs := dvFile(bm)
	f.Add(file, offs[0], int32(len(bm)), int64(1))
	f.Fuzz(func(t *testing.T, file []byte, off, size int32, card int64) {
		dv := &DeletionVector{StorageType: "p", PathOrInlineDv: "x.bin", Offset: &off, SizeInBytes: size, Cardinality: card % (1 << 20)}
		if b, err := dv.StoredBitmap(file); err == nil {
			_, _ = dv.DeletedRows(b)
		}
	})
}

func FuzzInlineDV(f *testing.F) {
	f.Add("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", int32(40), int64(6))
	f.Fuzz(func(t *testing.T, s string, size int32, card int64) {
		dv := &DeletionVector{StorageType: "i", PathOrInlineDv: s, SizeInBytes: size, Cardinality: card % (1 << 20)}
		if b, err := dv.InlineBitmap(); err == nil {
			_, _ = dv.DeletedRows(b)
		}
		if raw, err := DecodeZ85(s); err == nil && EncodeZ85(raw) != s {
			t.Fatalf("z85 %q does not round trip", s)
		}
	})
}

func FuzzParseLastCheckpoint(f *testing.F) {
	for _, b := range fixtureFiles(f, "*/_delta_log/_last_checkpoint") {
		f.Add(b)
	}
	f.Add([]byte(`{"k0":"'v 0'", "checksum": "6a92d155a59bf2eecbd4b4ec7fd1f875", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseLastCheckpoint(data)
	})
}

func FuzzPartitionValue(f *testing.F) {
	for _, s := range []string{"string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary", "date", "timestamp", "timestamp_ntz", "decimal(10,2)", "decimal(38,0)"} {
		f.Add(s, "1")
	}
	f.Add("timestamp", "1970-01-01T00:00:00.123456Z")
	f.Add("decimal(10,2)", "1.2E+3")
	f.Fuzz(func(t *testing.T, typ, v string) {
		pt, err := parsePrimitive(typ)
		if err != nil {
			return
		}
		got, err := ParsePartitionValue(pt, &v)
		if err != nil {
			return
		}
		out, err := FormatPartitionValue(pt, got)
		if err != nil {
			if pt.Name == "binary" { // non-UTF-8 has no serialization
				return
			}
			t.Fatalf("%s %q parsed to %#v, which does not format: %v", typ, v, got, err)
		}
		again, err := ParsePartitionValue(pt, out)
		if err != nil {
			t.Fatalf("%s %q formats to %v, which does not parse: %v", typ, v, deref(out), err)
		}
		if fl, ok := got.(float64); ok && math.IsNaN(fl) {
			return
		}
		if fl, ok := got.(float32); ok && math.IsNaN(float64(fl)) {
			return
		}
		if b, ok := got.([]byte); ok {
			if !bytes.Equal(b, again.([]byte)) {
				t.Fatalf("binary %q round trip", v)
			}
			return
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("%s %q: %#v formats to %v and parses to %#v", typ, v, got, deref(out), again)
		}
	})
}
