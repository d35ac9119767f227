package integration

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	dcodec "github.com/flightgw/flightgw/codec/delta"
	"github.com/flightgw/flightgw/codec/envelope"
)

const deltaSigningKey = "delta-messages-key"

// deltaGateways starts n gateways sharing the Delta warehouse wh and the
// signing key.
func deltaGateways(t *testing.T, wh string, n int) []*gateway {
	conf := fmt.Sprintf(`tickets: {signing_key: %s}
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "%s", create-namespaces: default}
default_catalog: dl
`, deltaSigningKey, wh)
	var out []*gateway
	for range n {
		out = append(out, startGateway(t, conf))
	}
	return out
}

func deltaMessages(commitID, table string, payloads ...[]byte) map[string]any {
	return map[string]any{"commit_id": commitID, "tables": []map[string]any{
		{"catalog": "dl", "schema": "default", "table": table, "payloads": payloads}}}
}

// TestDeltaCommitMessages: three worker gateways ingest into one Delta
// table in transactions and PrepareCommit; a coordinator commits the
// three payloads once, in one log version. Each payload is the staged
// files' add actions, one JSON line each, in the signed envelope (kind
// delta). SQL reads every row; the repeat answers the same version;
// GetCommitStatus finds it; a payload naming a file outside the table
// (../, another table's file), signed with the key, is InvalidArgument;
// committed payloads cannot be aborted; an uncommitted one is aborted and
// leaves no data file.
func TestDeltaCommitMessages(t *testing.T) {
	requireEngine(t)
	wh := t.TempDir()
	gs := deltaGateways(t, wh, 4)
	coord := gs[3].flightClient(t)
	ctx := context.Background()
	var payloads [][]byte
	for i, g := range gs[:3] {
		o := modeAppend("orders")
		if i == 0 {
			o = modeCreate("orders")
		}
		o.Catalog = ptr("dl")
		payloads = append(payloads, prepareIn(t, g.flightClient(t), o, i*100, 100))
	}
	m := hmac.New(sha256.New, []byte(deltaSigningKey))
	m.Write([]byte("flightgw commit messages v2"))
	key := m.Sum(nil)
	e, err := envelope.Open(payloads[0], key)
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != dcodec.EnvelopeKind || e.SerializerVersion != dcodec.ActionsVersion {
		t.Fatalf("envelope kind %q version %d, want delta %d", e.Kind, e.SerializerVersion, dcodec.ActionsVersion)
	}
	lines := strings.Split(strings.TrimSuffix(string(e.Payload), "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], `{"add":{"path":"part-`) {
		t.Fatalf("payload %q, want add action lines", e.Payload)
	}
	if got := countIn(t, coord, "dl.default.orders"); got != "0" {
		t.Fatalf("%s rows before CommitMessages, want 0", got)
	}

	// Payloads naming files outside the table, signed with the key.
	for _, bad := range []string{"../other/x.parquet", "../../default/other/part-0.parquet", "/etc/passwd.parquet"} {
		path := lines[0][len(`{"add":{"path":"`):strings.Index(lines[0], `","partitionValues"`)]
		f := e
		f.Payload = []byte(strings.Replace(string(e.Payload), path, bad, 1))
		outside, err := envelope.Seal(f, key)
		if err != nil {
			t.Fatal(err)
		}
		assertStatus(t, doAction(ctx, coord, "CommitMessages", deltaMessages("bad", "orders", payloads[1], outside), nil), codes.InvalidArgument, "not a file this gateway writes")
	}
	assertStatus(t, doAction(ctx, coord, "CommitMessages", deltaMessages("bad", "orders", payloads[1], payloads[1]), nil), codes.InvalidArgument, "twice")

	var first, again committedReply
	if err := doAction(ctx, coord, "CommitMessages", deltaMessages("job-7", "orders", payloads...), &first); err != nil {
		t.Fatalf("CommitMessages: %v", err)
	}
	if len(first.Tables) != 1 || first.Tables[0].SnapshotID != 1 || first.Tables[0].Rows != 300 {
		t.Fatalf("CommitMessages reply %+v", first)
	}
	if err := doAction(ctx, gs[1].flightClient(t), "CommitMessages", deltaMessages("job-7", "orders", payloads...), &again); err != nil || again.Tables[0].SnapshotID != 1 {
		t.Fatalf("repeated CommitMessages: %+v, %v", again, err)
	}
	if got := queryOne(t, gs[0], "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM dl.default.orders"); got != "300|300|0|299" {
		t.Fatalf("rows = %s, want 300|300|0|299", got)
	}
	var st struct {
		Landed     bool  `json:"landed"`
		SnapshotID int64 `json:"snapshot_id"`
	}
	if err := doAction(ctx, coord, "GetCommitStatus", map[string]any{"catalog": "dl", "schema": "default", "table": "orders", "commit_id": "job-7"}, &st); err != nil || !st.Landed || st.SnapshotID != 1 {
		t.Fatalf("GetCommitStatus: %+v, %v", st, err)
	}

	before := parquetIn(t, wh)
	assertStatus(t, doAction(ctx, coord, "AbortMessages", deltaMessages("job-7", "orders", payloads...), nil), codes.FailedPrecondition, "landed")
	assertStatus(t, doAction(ctx, coord, "AbortMessages", deltaMessages("", "orders", payloads[2]), nil), codes.FailedPrecondition, "referenced")
	o := modeAppend("orders")
	o.Catalog = ptr("dl")
	dropped := prepareIn(t, gs[2].flightClient(t), o, 1000, 20)
	if n := len(parquetIn(t, wh)); n <= len(before) {
		t.Fatalf("%d data files after a prepared ingest, %d before", n, len(before))
	}
	if err := doAction(ctx, coord, "AbortMessages", deltaMessages("job-8", "orders", dropped), nil); err != nil {
		t.Fatalf("AbortMessages: %v", err)
	}
	if after := parquetIn(t, wh); !slices.Equal(after, before) {
		t.Fatalf("data files after AbortMessages:\n%v\nbefore:\n%v", after, before)
	}
}
