package integration

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/codec/envelope"
	"github.com/flightgw/flightgw/codec/paimon"
)

// paimonDist is the directory shared with Paimon Java by make
// paimon-dist-check (mk/paimon.mk): the warehouse wh/, the payloads Java
// writers staged in java/, those the gateway prepared for Java in
// gateway/, and wh/expected/ for Java's verify-tables.
var paimonDist = flag.String("paimon-dist", "", "run the Paimon distributed-commit stages against this directory shared with Paimon Java")

const paimonSigningKey = "paimon-messages-key"

// paimonGateways starts n gateways sharing the Paimon warehouse wh and the
// signing key.
func paimonGateways(t *testing.T, wh string, n int) []*gateway {
	conf := fmt.Sprintf(`tickets: {signing_key: %s}
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "%s", create-namespaces: default}
default_catalog: pm
`, paimonSigningKey, wh)
	var out []*gateway
	for range n {
		out = append(out, startGateway(t, conf))
	}
	return out
}

// paimonMessageKey is the commit-message HMAC key the gateways derive.
func paimonMessageKey() []byte {
	m := hmac.New(sha256.New, []byte(paimonSigningKey))
	m.Write([]byte("flightgw commit messages v2"))
	return m.Sum(nil)
}

func pmIngest(table string, create bool, opts map[string]string) *flightsql.ExecuteIngestOpts {
	o := modeAppend(table)
	if create {
		o = modeCreate(table)
		o.Options = opts
	}
	o.Catalog = ptr("pm")
	return o
}

func pmMessages(commitID, table string, payloads ...[]byte) map[string]any {
	return map[string]any{"commit_id": commitID, "tables": []map[string]any{
		{"catalog": "pm", "schema": "default", "table": table, "payloads": payloads}}}
}

// writeExpected writes what Paimon Java's verify-tables must read of a
// table (when the test runs for make paimon-dist-check).
func writeExpected(t *testing.T, wh, table string, rows []string) {
	t.Helper()
	if *paimonDist == "" {
		return
	}
	slices.Sort(rows)
	dir := filepath.Join(wh, "expected")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("ROWS %d\n%s\n", len(rows), strings.Join(rows, "\n"))
	if err := os.WriteFile(filepath.Join(dir, table+".txt"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// peopleRendered renders people(from, n) as Tables.render prints them.
func peopleRendered(from, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("id=%d,name=p%d,score=%d.5", from+i, from+i, i)
	}
	return out
}

// TestPaimonCommitMessages: three worker gateways ingest into one Paimon
// table (two fixed buckets) in transactions and PrepareCommit; a
// coordinator commits the three payloads once. The payloads are Paimon's
// CommitMessageSerializer list at version 11 in the signed envelope. SQL
// reads every row (Paimon Java too, under make paimon-dist-check); the
// repeat returns the same snapshot; a payload naming an external path is
// refused; committed payloads cannot be aborted; an uncommitted one is
// aborted and leaves no data file.
func TestPaimonCommitMessages(t *testing.T) {
	requireEngine(t)
	wh := t.TempDir()
	if *paimonDist != "" {
		wh = filepath.Join(*paimonDist, "wh")
	}
	gs := paimonGateways(t, wh, 4)
	coord := gs[3].flightClient(t)
	ctx := context.Background()
	var payloads [][]byte
	for i, g := range gs[:3] {
		opts := pmIngest("orders", i == 0, map[string]string{"bucket": "2", "bucket-key": "id"})
		payloads = append(payloads, prepareIn(t, g.flightClient(t), opts, i*100, 100))
	}
	e, err := envelope.Open(payloads[0], paimonMessageKey())
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != paimon.EnvelopeKind || e.SerializerVersion != paimon.Version11 {
		t.Fatalf("envelope kind %q version %d, want paimon 11", e.Kind, e.SerializerVersion)
	}
	msgs, err := paimon.DecodeList(e.SerializerVersion, e.Payload)
	if err != nil {
		t.Fatalf("the payload is not a CommitMessageSerializer list: %v", err)
	}
	if got := countIn(t, coord, "pm.default.orders"); got != "0" {
		t.Fatalf("%s rows before CommitMessages, want 0", got)
	}

	// A payload naming a file outside the table, signed with the key.
	ext := "file:///etc/passwd"
	msgs[0].Data.NewFiles[0].ExternalPath = &ext
	if e.Payload, err = paimon.EncodeList(e.SerializerVersion, msgs); err != nil {
		t.Fatal(err)
	}
	outside, err := envelope.Seal(e, paimonMessageKey())
	if err != nil {
		t.Fatal(err)
	}
	assertStatus(t, doAction(ctx, coord, "CommitMessages", pmMessages("bad", "orders", payloads[1], outside), nil), codes.InvalidArgument, "external path")
	assertStatus(t, doAction(ctx, coord, "CommitMessages", pmMessages("bad", "orders", payloads[1], payloads[1]), nil), codes.InvalidArgument, "twice")

	var first, again committedReply
	if err := doAction(ctx, coord, "CommitMessages", pmMessages("job-7", "orders", payloads...), &first); err != nil {
		t.Fatalf("CommitMessages: %v", err)
	}
	if len(first.Tables) != 1 || first.Tables[0].SnapshotID != 1 || first.Tables[0].Rows != 300 {
		t.Fatalf("CommitMessages reply %+v", first)
	}
	if err := doAction(ctx, gs[1].flightClient(t), "CommitMessages", pmMessages("job-7", "orders", payloads...), &again); err != nil || again.Tables[0].SnapshotID != 1 {
		t.Fatalf("repeated CommitMessages: %+v, %v", again, err)
	}
	if got := queryOne(t, gs[0], "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM pm.default.orders"); got != "300|300|0|299" {
		t.Fatalf("rows = %s, want 300|300|0|299", got)
	}
	var st struct {
		Landed     bool  `json:"landed"`
		SnapshotID int64 `json:"snapshot_id"`
	}
	if err := doAction(ctx, coord, "GetCommitStatus", map[string]any{"catalog": "pm", "schema": "default", "table": "orders", "commit_id": "job-7"}, &st); err != nil || !st.Landed || st.SnapshotID != 1 {
		t.Fatalf("GetCommitStatus: %+v, %v", st, err)
	}

	before := parquetIn(t, wh)
	assertStatus(t, doAction(ctx, coord, "AbortMessages", pmMessages("job-7", "orders", payloads...), nil), codes.FailedPrecondition, "landed")
	assertStatus(t, doAction(ctx, coord, "AbortMessages", pmMessages("", "orders", payloads[2]), nil), codes.FailedPrecondition, "referenced")
	dropped := prepareIn(t, gs[2].flightClient(t), pmIngest("orders", false, nil), 1000, 20)
	if n := len(parquetIn(t, wh)); n <= len(before) {
		t.Fatalf("%d data files after a prepared ingest, %d before", n, len(before))
	}
	if err := doAction(ctx, coord, "AbortMessages", pmMessages("job-8", "orders", dropped), nil); err != nil {
		t.Fatalf("AbortMessages: %v", err)
	}
	if after := parquetIn(t, wh); !slices.Equal(after, before) {
		t.Fatalf("data files after AbortMessages:\n%v\nbefore:\n%v", after, before)
	}
	var want []string
	for i := range 3 {
		want = append(want, peopleRendered(i*100, 100)...)
	}
	writeExpected(t, wh, "orders", want)
}

// TestPaimonJavaPayloads (make paimon-dist-check, after Java's
// write-messages): the payloads two Paimon Java 1.4.2 writers staged
// (BatchTableWrite.prepareCommit, CommitMessageSerializer), each sealed in
// the envelope with the replicas' key, are committed once by
// CommitMessages; SQL reads every row, and Java's verify-tables then does.
// Then two gateway workers prepare payloads for a Java coordinator: their
// CommitMessageSerializer bytes, out of the envelope, go to gateway/ for
// Java's commit-messages.
func TestPaimonJavaPayloads(t *testing.T) {
	requireEngine(t)
	if *paimonDist == "" {
		t.Skip("needs Paimon Java's payloads: make paimon-dist-check")
	}
	wh := filepath.Join(*paimonDist, "wh")
	gs := paimonGateways(t, wh, 2)
	coord := gs[0].flightClient(t)
	ctx := context.Background()
	vb, err := os.ReadFile(filepath.Join(*paimonDist, "java", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if _, err := fmt.Sscan(string(vb), &version); err != nil {
		t.Fatal(err)
	}
	var payloads [][]byte
	for w := range 2 {
		raw, err := os.ReadFile(filepath.Join(*paimonDist, "java", fmt.Sprintf("writer-%d.bin", w)))
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := envelope.Seal(envelope.Envelope{Kind: paimon.EnvelopeKind, SerializerVersion: version,
			Table: []string{"pm", "default", "from_java"}, CommitUser: "java-writer", PreparedAt: time.Now(), Payload: raw}, paimonMessageKey())
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, sealed)
	}
	var res committedReply
	if err := doAction(ctx, coord, "CommitMessages", pmMessages("java-1", "from_java", payloads...), &res); err != nil {
		t.Fatalf("CommitMessages of Java's payloads: %v", err)
	}
	if len(res.Tables) != 1 || res.Tables[0].Rows != 100 {
		t.Fatalf("CommitMessages reply %+v", res)
	}
	if got := queryOne(t, gs[1], "SELECT count(*), count(DISTINCT id), min(id), max(id), count(DISTINCT p) FROM pm.default.from_java"); got != "100|100|0|99|3" {
		t.Fatalf("rows = %s, want 100|100|0|99|3", got)
	}
	var want []string
	for id := range 100 {
		want = append(want, fmt.Sprintf("id=%d,name=j%d,p=p%d", id, id, id%3))
	}
	writeExpected(t, wh, "from_java", want)

	// The other direction: gateway workers prepare, Java will commit.
	out := filepath.Join(*paimonDist, "gateway")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for w, g := range gs {
		opts := pmIngest("for_java", w == 0, map[string]string{"bucket": "2", "bucket-key": "id"})
		e, err := envelope.Open(prepareIn(t, g.flightClient(t), opts, w*100, 100), paimonMessageKey())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("worker-%d.bin", w)), e.Payload, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "VERSION"), []byte(fmt.Sprintln(e.SerializerVersion)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPaimonJavaCommitted (make paimon-dist-check, after Java's
// commit-messages): the gateway's SQL reads every row of the two gateway
// workers' payloads that a Paimon Java coordinator committed with
// BatchTableCommit.
func TestPaimonJavaCommitted(t *testing.T) {
	requireEngine(t)
	if *paimonDist == "" {
		t.Skip("needs Paimon Java's commit: make paimon-dist-check")
	}
	g := paimonGateways(t, filepath.Join(*paimonDist, "wh"), 1)[0]
	if got := queryOne(t, g, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM pm.default.for_java"); got != "200|200|0|199" {
		t.Fatalf("rows = %s, want 200|200|0|199", got)
	}
}

// doAction runs a distributed-commit action with a JSON body and decodes
// its one JSON result into out (when not nil).
func doAction(ctx context.Context, c *flightsql.Client, action string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	stream, err := c.Client.DoAction(ctx, &flight.Action{Type: action, Body: body})
	if err != nil {
		return err
	}
	res, err := stream.Recv()
	if err != nil {
		return err
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: a second result or an error after the first: %v", action, err)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res.GetBody(), out)
}

type preparedReply struct {
	TransactionID string `json:"transaction_id"`
	Tables        []struct {
		Catalog, Schema, Table string
		Rows                   uint64
		Payload                []byte
	} `json:"tables"`
}

type committedReply struct {
	CommitID string `json:"commit_id"`
	Tables   []struct {
		Table      string `json:"table"`
		SnapshotID int64  `json:"snapshot_id"`
		Rows       uint64 `json:"rows"`
	} `json:"tables"`
}
