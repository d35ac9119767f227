package paimon_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// stagePayload writes rows into a fresh stream of table id and returns the
// receipts and their payload as PrepareCommit hands it out.
func stagePayload(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, from, n int) ([]catalogs.WriteReceipt, int, []byte) {
	t.Helper()
	ctx := context.Background()
	ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	b := sampleBatch(rowsFrom(int64(from), int64(n), 0))
	defer b.Release()
	if err := ws.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, payload, err := p.EncodePayload(ctx, id, rs)
	if err != nil {
		t.Fatal(err)
	}
	return rs, v, payload
}

// TestPayloadChecks: a payload decodes into receipts whose paths come from
// the table, never from the payload; a payload that names an external
// path, a bucket or partition the table lacks, a file name with a path,
// a file that is not there, deletions or another table's files is
// refused, naming what is wrong; a committed payload cannot be aborted.
func TestPayloadChecks(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "parts"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"partition": "p", "bucket": "3", "bucket-key": "id"}); err != nil {
		t.Fatal(err)
	}
	other := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "other"}
	if _, err := p.CreateTable(ctx, other, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
	_, v, payload := stagePayload(t, p, id, 0, 40)
	if v != pcodec.Version11 {
		t.Fatalf("payload version %d, want 11 (Paimon 1.4)", v)
	}
	rs, err := p.DecodePayload(ctx, id, v, payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].RowCount != 40 {
		t.Fatalf("decoded %d receipts, %+v", len(rs), rs)
	}
	if err := p.CheckReceipts(ctx, id, rs); err != nil {
		t.Fatalf("CheckReceipts of a good payload: %v", err)
	}
	ext := "file:///etc/passwd"
	two := int32(2)
	for _, c := range []struct {
		name  string
		edit  func(m []pcodec.CommitMessage) []pcodec.CommitMessage
		table catalogs.TableIdent
		says  string
	}{
		{"external path", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			m[0].Data.NewFiles[0].ExternalPath = &ext
			return m
		}, id, "external path"},
		{"file name with a path", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			m[0].Data.NewFiles[0].FileName = "../../other/bucket-0/x.parquet"
			return m
		}, id, "not a plain file name"},
		{"bucket outside", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			m[0].Bucket = 3
			return m
		}, id, "outside the table's 3 buckets"},
		{"total buckets", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			m[0].TotalBuckets = &two
			return m
		}, id, "2 total buckets"},
		{"partition arity", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			m[0].Partition = pcodec.EmptyRow
			return m
		}, id, "partition row of 0 fields"},
		{"deleted files", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			m[0].Data.DeletedFiles = m[0].Data.NewFiles
			return m
		}, id, "only new data files"},
		{"missing file", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			m[0].Data.NewFiles[0].FileName = "data-00000000-0000-0000-0000-000000000000-0.parquet"
			return m
		}, id, "does not exist"},
		{"added twice", func(m []pcodec.CommitMessage) []pcodec.CommitMessage {
			return append(m, m[0])
		}, id, "twice"},
		{"another table's", func(m []pcodec.CommitMessage) []pcodec.CommitMessage { return m }, other, "partition row of 1 fields"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := pcodec.DecodeList(v, payload)
			if err != nil {
				t.Fatal(err)
			}
			b, err := pcodec.EncodeList(v, c.edit(m))
			if err != nil {
				t.Fatal(err)
			}
			rs, err := p.DecodePayload(ctx, c.table, v, b)
			if err == nil {
				err = p.CheckReceipts(ctx, c.table, rs)
			}
			if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want InvalidArgument saying %q", err, c.says)
			}
		})
	}
	if _, err := p.DecodePayload(ctx, id, v, payload[:len(payload)-3]); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("truncated payload: %v", err)
	}
	if _, err := p.DecodePayload(ctx, id, 13, payload); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "13") {
		t.Fatalf("version 13: %v", err)
	}

	// Unreferenced until committed; then an abort is refused.
	if err := p.CheckUnreferenced(ctx, id, rs); err != nil {
		t.Fatalf("CheckUnreferenced before the commit: %v", err)
	}
	if _, err := p.CommitOnce(ctx, id, "c1", rs); err != nil {
		t.Fatal(err)
	}
	// Another commit after it: the files stay referenced by the older snapshot.
	rs2, _, _ := stagePayload(t, p, id, 100, 5)
	if _, err := p.CommitOnce(ctx, id, "c2", rs2); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckUnreferenced(ctx, id, rs); !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "referenced") {
		t.Fatalf("CheckUnreferenced after the commit: %v", err)
	}
	if got := scanRendered(t, p, id); len(got) != 45 {
		t.Fatalf("%d rows after the commits, want 45", len(got))
	}
}
