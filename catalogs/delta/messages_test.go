package delta_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// TestPayloads: a Delta payload is the add actions of the staged files,
// one JSON line each, and decodes back to them for the table as it is;
// a payload that names a file outside the table (../, an absolute path,
// a URI, the log), carries anything but new-file adds, or partition
// values that are not the table's is InvalidArgument, and the table is
// untouched.
func TestPayloads(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "pay")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"partition": "name"}); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 2)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	v, payload, err := p.EncodePayload(ctx, id, []catalogs.WriteReceipt{r})
	if err != nil || v != dcodec.ActionsVersion {
		t.Fatalf("EncodePayload: %d, %v", v, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(payload), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"add":{"path":"name=row-0/part-`) {
		t.Fatalf("payload %s, want two add lines", payload)
	}
	rs, err := p.DecodePayload(ctx, id, v, payload)
	if err != nil || len(rs) != 1 || rs[0].RowCount != 2 {
		t.Fatalf("DecodePayload: %+v, %v", rs, err)
	}
	if err := p.CheckReceipts(ctx, id, rs); err != nil {
		t.Fatalf("CheckReceipts: %v", err)
	}
	first := lines[0]
	swap := func(old, new string) string { return strings.Replace(first, old, new, 1) + "\n" }
	path := first[len(`{"add":{"path":"`):strings.Index(first, `","partitionValues"`)]
	for _, tc := range []struct {
		name, payload, want string
	}{
		{"parent directory", swap(path, "../other/"+path), "not a file this gateway writes"},
		{"another table", swap(path, "../../default/other/part-0.parquet"), "not a file this gateway writes"},
		{"absolute path", swap(path, "/etc/passwd.parquet"), "not a file this gateway writes"},
		{"URI", swap(path, "file:///tmp/x.parquet"), "not a file this gateway writes"},
		{"escaped parent", swap(path, "%2E%2E/x.parquet"), "not a file this gateway writes"},
		{"the log", swap(path, "_delta_log/x.parquet"), "not a file this gateway writes"},
		{"not parquet", swap(path, "name=row-0/x.json"), "not a file this gateway writes"},
		{"wrong partition column", swap(`"partitionValues":{"name"`, `"partitionValues":{"id"`), "partition"},
		{"deletion vector", swap(`"dataChange":true`, `"dataChange":true,"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}`), "deletion vector"},
		{"a remove", `{"remove":{"path":"` + path + `","deletionTimestamp":1,"dataChange":true}}` + "\n", "not an add"},
		{"a metadata change", `{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}` + "\n", "payload"},
		{"an unknown action", `{"future":{}}` + "\n" + first + "\n", "add actions only"},
		{"the same file twice", first + "\n" + first + "\n", "twice"},
		{"empty", "", "newline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := p.DecodePayload(ctx, id, v, []byte(tc.payload))
			if err == nil {
				err = p.CheckReceipts(ctx, id, rs)
			}
			if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want InvalidArgument naming %q", err, tc.want)
			}
		})
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 0 {
		t.Fatalf("scan: %d rows, %v; want the table untouched", n, err)
	}
}

// FuzzDecodePayload: any payload bytes decode (and check) to receipts or
// to an InvalidArgument, never a panic or another kind, and a receipt that
// decodes names only Parquet files inside the table.
func FuzzDecodePayload(f *testing.F) {
	wh := f.TempDir()
	p := openLocal(f, wh)
	ctx := context.Background()
	id := ident("default", "fz")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"partition": "name"}); err != nil {
		f.Fatal(err)
	}
	b := catalogtest.Batch(0, 2)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		f.Fatal(err)
	}
	_, payload, err := p.EncodePayload(ctx, id, []catalogs.WriteReceipt{r})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload)
	f.Add([]byte(`{"add":{"path":"../x.parquet","partitionValues":{"name":null},"size":1,"modificationTime":0,"dataChange":true}}` + "\n"))
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := p.DecodePayload(ctx, id, dcodec.ActionsVersion, data)
		if err != nil {
			if !errors.Is(err, catalogs.ErrInvalidArgument) {
				t.Fatalf("%v: not InvalidArgument", err)
			}
			return
		}
		if err := p.CheckReceipts(ctx, id, rs); err != nil && !errors.Is(err, catalogs.ErrInvalidArgument) {
			t.Fatalf("CheckReceipts: %v: not InvalidArgument", err)
		}
	})
}

// TestPayloadsColumnMapping: on a column-mapped table a payload's
// partition values go by the column's physical name: the staged adds
// decode back and commit; the same add keyed by the logical name is
// InvalidArgument.
func TestPayloadsColumnMapping(t *testing.T) {
	p := openLocal(t, "")
	ctx := context.Background()
	id := ident("default", "paycm")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"partition": "name", "delta.columnMapping.mode": "name"}); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 2)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	v, payload, err := p.EncodePayload(ctx, id, []catalogs.WriteReceipt{r})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(payload), `"partitionValues":{"col-`) {
		t.Fatalf("payload %s, want partition values by physical name", payload)
	}
	first, _, _ := strings.Cut(string(payload), "\n")
	k := strings.Index(first, `"partitionValues":{"`) + len(`"partitionValues":{"`)
	phys := first[k : k+strings.Index(first[k:], `"`)]
	logical := strings.Replace(first, `"`+phys+`"`, `"name"`, 1) + "\n"
	if _, err := p.DecodePayload(ctx, id, v, []byte(logical)); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "partition") {
		t.Errorf("an add keyed by the logical name: %v, want InvalidArgument naming the partition column", err)
	}
	rs, err := p.DecodePayload(ctx, id, v, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(ctx, id, "cm-1", rs); err != nil {
		t.Fatal(err)
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 2 {
		t.Fatalf("scan: %d rows, %v; want 2", n, err)
	}
}
