package integration

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	ice "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/codec/actions"
	"github.com/flightgw/flightgw/codec/envelope"
	"github.com/flightgw/flightgw/codec/paimon"
)

// rawAction runs an action with body as it is, past the client
// package's typed requests, and returns its error.
func rawAction(ctx context.Context, c *flightsql.Client, action, body string) error {
	stream, err := c.Client.DoAction(ctx, &flight.Action{Type: action, Body: []byte(body)})
	if err == nil {
		_, err = stream.Recv()
	}
	return err
}

// sharedLake configures gateways that share the Iceberg catalog "lake" in
// dir and the signing key of commit messages.
func sharedLake(dir, signingKey string) string {
	return fmt.Sprintf(`tickets: {signing_key: %[2]s}
catalogs:
  - name: lake
    type: iceberg
    properties: {catalog-type: sql, uri: "sqlite:///%[1]s/catalog.db", warehouse: "file://%[1]s/warehouse", create-namespaces: default}
`, dir, signingKey)
}

// lakeTable names a table of the catalog "lake", schema "default".
func lakeTable(name string) actions.TableRef {
	return actions.TableRef{Catalog: "lake", Schema: "default", Table: name}
}

// payloadsFor is the one table of a CommitMessages / AbortMessages.
func payloadsFor(tableName string, payloads ...[]byte) []client.TablePayloads {
	return []client.TablePayloads{{TableRef: lakeTable(tableName), Payloads: payloads}}
}

// sharedTable loads a table of the shared embedded catalog with
// iceberg-go, independently of the gateways.
func sharedTable(t *testing.T, dir, name string) *table.Table {
	t.Helper()
	db, err := sql.Open("sqliteshim", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("lake", db, sqlcat.SQLite, ice.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"default", name})
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return tbl
}

// prepareIn begins a transaction on c, ingests rows [from, from+n) into
// table in it and prepares it; it returns the one table's payload.
func prepareIn(t *testing.T, c *flightsql.Client, opts *flightsql.ExecuteIngestOpts, from, n int) []byte {
	t.Helper()
	ctx := context.Background()
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts.TransactionId = tx.ID()
	if got, err := c.ExecuteIngest(ctx, reader(t, people(t, from, n)), opts); err != nil || got != int64(n) {
		t.Fatalf("ingest in the transaction: %d rows, %v", got, err)
	}
	res, err := client.PrepareCommit(ctx, c, string(tx.ID()))
	if err != nil {
		t.Fatalf("PrepareCommit: %v", err)
	}
	if len(res) != 1 || res[0].Table != opts.Table || res[0].Rows != uint64(n) || len(res[0].Payloads) != 1 || len(res[0].Payloads[0]) == 0 {
		t.Fatalf("PrepareCommit reply %+v", res)
	}
	// The transaction has ended: its rows are nowhere yet, and COMMIT of
	// it is refused.
	assertStatus(t, endTransaction(t, c, tx.ID(), 1), codes.FailedPrecondition, "prepared")
	return res[0].Payloads[0]
}

// TestCommitMessagesAcrossGateways: three worker gateways sharing one
// catalog and the signing key each ingest into the same Iceberg table in a
// transaction and prepare it; a fourth commits the three payloads once.
// iceberg-go then sees exactly one snapshot holding every row and the
// commit id; the commit repeated returns the same snapshot and appends
// nothing. Forged, truncated, other-table, path-outside-table and
// wrong-version payloads are refused InvalidArgument naming what failed,
// with nothing committed; AbortMessages leaves no staged file.
func TestCommitMessagesAcrossGateways(t *testing.T) {
	requireEngine(t)
	shared := t.TempDir()
	const signingKey = "commit-messages-key"
	conf := sharedLake(shared, signingKey)
	var workers []*flightsql.Client
	for range 3 {
		workers = append(workers, startGateway(t, conf).flightClient(t))
	}
	coord := startGateway(t, conf).flightClient(t)
	ctx := context.Background()

	// ListActions lists the four, each with a description.
	listed := map[string]string{}
	la, err := coord.Client.ListActions(ctx, &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		a, err := la.Recv()
		if err != nil {
			break
		}
		listed[a.GetType()] = a.GetDescription()
	}
	for _, a := range []string{"PrepareCommit", "CommitMessages", "AbortMessages", "GetCommitStatus", flightsql.BeginTransactionActionType} {
		if _, ok := listed[a]; !ok || (a != flightsql.BeginTransactionActionType && listed[a] == "") {
			t.Errorf("ListActions: %s missing or undescribed: %v", a, listed)
		}
	}

	// An unrelated table, to send payloads to the wrong one.
	if _, err := coord.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), modeCreate("elsewhere")); err != nil {
		t.Fatal(err)
	}
	var payloads [][]byte
	for i, w := range workers {
		opts := modeAppend("orders")
		if i == 0 {
			opts = modeCreate("orders")
		}
		payloads = append(payloads, prepareIn(t, w, opts, i*100, 100))
	}
	if got := countIn(t, coord, "orders"); got != "0" {
		t.Fatalf("%s rows before CommitMessages, want 0", got)
	}

	// Refused payloads, each alone and beside good ones: nothing commits.
	key := hmac.New(sha256.New, []byte(signingKey))
	key.Write([]byte("flightgw commit messages v2"))
	msgKey := key.Sum(nil)
	flipped := slices.Clone(payloads[1])
	flipped[len(flipped)-1] ^= 1
	wrongVersion := slices.Clone(payloads[1])
	wrongVersion[4] = 3
	v1, _ := paimon.Wrap(paimon.Version11, []byte{0, 0, 0, 0})
	outside := resealed(t, payloads[1], msgKey, func(receipt map[string]any) {
		files := receipt["files"].([]any)
		files[0].(map[string]any)["path"] = "file://" + shared + "/elsewhere/x.parquet"
	})
	otherKey := resealed(t, payloads[1], []byte("another replica's key"), nil)
	expired, err := envelope.Parse(payloads[1])
	if err != nil {
		t.Fatal(err)
	}
	expired.PreparedAt = expired.PreparedAt.Add(-13 * time.Hour)
	stale, err := envelope.Seal(expired, msgKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, table string
		payload     []byte
		code        codes.Code
		says        string
	}{
		{"forged", "orders", flipped, codes.InvalidArgument, "HMAC"},
		{"signed by another key", "orders", otherKey, codes.InvalidArgument, "HMAC"},
		{"truncated", "orders", payloads[1][:len(payloads[1])-40], codes.InvalidArgument, "truncated"},
		{"other table", "elsewhere", payloads[1], codes.InvalidArgument, "prepared for table lake.default.orders"},
		{"path outside the table", "orders", outside, codes.InvalidArgument, "outside the table's location"},
		{"wrong envelope version", "orders", wrongVersion, codes.InvalidArgument, "version 3"},
		{"unsigned version 1", "orders", v1, codes.InvalidArgument, "unsigned"},
		{"not an envelope", "orders", []byte("hello"), codes.InvalidArgument, "magic"},
		{"expired", "orders", stale, codes.InvalidArgument, "expire"},
	} {
		list, at := [][]byte{payloads[0], c.payload}, "payload 1"
		if c.table != "orders" {
			list, at = [][]byte{c.payload}, "payload 0"
		}
		_, err := client.CommitMessages(ctx, coord, "bad-"+strings.ReplaceAll(c.name, " ", "-"), payloadsFor(c.table, list...))
		assertStatus(t, err, c.code, c.says)
		if c.code == codes.InvalidArgument && !strings.Contains(c.says, "outside") {
			assertStatus(t, err, c.code, at)
		}
	}
	for _, id := range []string{"", "x y"} {
		_, err := client.CommitMessages(ctx, coord, id, payloadsFor("orders", payloads...))
		assertStatus(t, err, codes.InvalidArgument, "commit_id")
	}
	assertStatus(t, rawAction(ctx, coord, "CommitMessages", `{"commit_id": "j", "tabels": 1}`), codes.InvalidArgument, "tabels")
	if snaps := sharedTable(t, shared, "orders").Metadata().Snapshots(); len(snaps) != 0 {
		t.Fatalf("%d snapshots after refused commits, want 0", len(snaps))
	}

	// The commit, then its repeat after a "lost reply".
	first, err := client.CommitMessages(ctx, coord, "job-42", payloadsFor("orders", payloads...))
	if err != nil {
		t.Fatalf("CommitMessages: %v", err)
	}
	if len(first.Tables) != 1 || first.Tables[0].SnapshotID == 0 || first.Tables[0].Rows != 300 {
		t.Fatalf("CommitMessages reply %+v", first)
	}
	again, err := client.CommitMessages(ctx, workers[2], "job-42", payloadsFor("orders", payloads...))
	if err != nil {
		t.Fatalf("CommitMessages repeated on another gateway: %v", err)
	}
	if again.Tables[0].SnapshotID != first.Tables[0].SnapshotID {
		t.Fatalf("repeated commit: snapshot %d, first %d", again.Tables[0].SnapshotID, first.Tables[0].SnapshotID)
	}
	tbl := sharedTable(t, shared, "orders")
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) != 1 || snaps[0].SnapshotID != first.Tables[0].SnapshotID {
		t.Fatalf("snapshots %+v, want exactly the one committed", snaps)
	}
	if got := snaps[0].Summary.Properties["flightgw.commit-id"]; got != "msg-job-42" {
		t.Fatalf("summary commit id %q", got)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	ids := int64Column(t, at, "id")
	if len(ids) != 300 || ids[0] != 0 || ids[299] != 299 {
		t.Fatalf("%d rows read back (%v...)", len(ids), ids[:min(len(ids), 5)])
	}

	// GetCommitStatus, from any gateway.
	st, err := client.GetCommitStatus(ctx, workers[0], "job-42", lakeTable("orders"))
	if err != nil || !st.Landed || st.SnapshotID != first.Tables[0].SnapshotID || st.Rows != 300 {
		t.Fatalf("GetCommitStatus job-42: %+v, %v", st, err)
	}
	if st, err := client.GetCommitStatus(ctx, workers[0], "job-41", lakeTable("orders")); err != nil || st.Landed {
		t.Fatalf("GetCommitStatus job-41: %+v, %v", st, err)
	}

	// AbortMessages of committed payloads, naming their commit: refused.
	before := parquetIn(t, filepath.Join(shared, "warehouse"))
	abort := func(commitID string, payloads ...[]byte) error {
		_, err := client.AbortMessages(ctx, coord, commitID, payloadsFor("orders", payloads...))
		return err
	}
	assertStatus(t, abort("job-42", payloads...), codes.FailedPrecondition, "landed")
	// Naming no commit, or another one, does not make them deletable:
	// their files are referenced by the table.
	assertStatus(t, abort("", payloads...), codes.FailedPrecondition, "referenced")
	assertStatus(t, abort("job-99", payloads[1]), codes.FailedPrecondition, "referenced")
	if after := parquetIn(t, filepath.Join(shared, "warehouse")); !slices.Equal(after, before) {
		t.Fatal("an abort of committed payloads deleted files")
	}
	// A prepared payload never committed: aborted, no staged file left.
	dropped := prepareIn(t, workers[1], modeAppend("orders"), 1000, 50)
	if n := len(parquetIn(t, filepath.Join(shared, "warehouse"))); n <= len(before) {
		t.Fatalf("%d data files after a prepared ingest, %d before", n, len(before))
	}
	assertStatus(t, abort("", flipped), codes.InvalidArgument, "HMAC")
	if err := abort("job-43", dropped); err != nil {
		t.Fatalf("AbortMessages: %v", err)
	}
	if after := parquetIn(t, filepath.Join(shared, "warehouse")); !slices.Equal(after, before) {
		t.Fatalf("data files after AbortMessages:\n%v\nbefore:\n%v", after, before)
	}
	if got := countIn(t, coord, "orders"); got != "300" {
		t.Fatalf("%s rows at the end, want 300", got)
	}
}

// resealed rewrites the first receipt of a payload with edit and seals it
// again with key, as a replica holding key (or not) could.
func resealed(t *testing.T, payload, key []byte, edit func(map[string]any)) []byte {
	t.Helper()
	e, err := envelope.Parse(payload)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := envelope.DecodeReceipts(e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var m map[string]any
		if err := json.Unmarshal(rs[0].Metadata, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		rs[0].Metadata, _ = json.Marshal(m)
	}
	if e.Payload, err = envelope.EncodeReceipts(rs); err != nil {
		t.Fatal(err)
	}
	out, err := envelope.Seal(e, key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCommitMessagesRealm: a coordinator of another realm cannot commit,
// abort or look up a payload of a realm's table: the catalog does not
// exist for it, and a payload named under its own catalog is another
// table's.
func TestCommitMessagesRealm(t *testing.T) {
	g := startGateway(t, realmConfig(t)+"tickets: {signing_key: realm-key}\n")
	alice, actx := login(t, g, "alice", "alice-pw")
	bob, bctx := login(t, g, "bob", "bob-pw")
	tx, err := alice.BeginTransaction(actx)
	if err != nil {
		t.Fatal(err)
	}
	opts := modeCreate("orders")
	sales := "salesdb"
	opts.Catalog = &sales
	opts.TransactionId = tx.ID()
	if _, err := alice.ExecuteIngest(actx, reader(t, people(t, 0, 10)), opts); err != nil {
		t.Fatal(err)
	}
	prepared, err := client.PrepareCommit(actx, alice, string(tx.ID()))
	if err != nil {
		t.Fatal(err)
	}
	// Bob cannot prepare Alice's transaction either.
	_, err = client.PrepareCommit(bctx, bob, string(tx.ID()))
	assertStatus(t, err, codes.NotFound, "not found")
	in := func(catalog string) []client.TablePayloads {
		return []client.TablePayloads{{TableRef: actions.TableRef{Catalog: catalog, Schema: "default", Table: "orders"}, Payloads: prepared[0].Payloads}}
	}
	_, err = client.CommitMessages(bctx, bob, "r1", in("salesdb"))
	assertStatus(t, err, codes.NotFound, "salesdb")
	_, err = client.AbortMessages(bctx, bob, "r1", in("salesdb"))
	assertStatus(t, err, codes.NotFound, "salesdb")
	_, err = client.CommitMessages(bctx, bob, "r1", in("opsdb"))
	assertStatus(t, err, codes.InvalidArgument, "prepared for table salesdb.default.orders")
	_, err = client.GetCommitStatus(bctx, bob, "r1", actions.TableRef{Catalog: "salesdb", Table: "orders"})
	assertStatus(t, err, codes.NotFound, "salesdb")
	if _, err := client.CommitMessages(actx, alice, "r1", in("salesdb")); err != nil {
		t.Fatalf("alice commits her own payload: %v", err)
	}
}

// TestCommitMessagesTTLConfigured: commit_messages.ttl reaches
// CommitMessages: with it at 1h, a payload prepared 2h ago (resealed with
// the replicas' key, as a replica could) is refused as expired, where the
// default (12h) would take it; the payload as prepared commits.
func TestCommitMessagesTTLConfigured(t *testing.T) {
	requireEngine(t)
	const signingKey = "ttl-key"
	g := startGateway(t, "tickets: {signing_key: "+signingKey+"}\ncommit_messages: {ttl: 1h}\n")
	c := g.flightClient(t)
	ctx := context.Background()
	payload := prepareIn(t, c, modeCreate("orders"), 0, 10)
	key := hmac.New(sha256.New, []byte(signingKey))
	key.Write([]byte("flightgw commit messages v2"))
	e, err := envelope.Parse(payload)
	if err != nil {
		t.Fatal(err)
	}
	e.PreparedAt = e.PreparedAt.Add(-2 * time.Hour)
	old, err := envelope.Seal(e, key.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CommitMessages(ctx, c, "ttl-1", payloadsFor("orders", old))
	assertStatus(t, err, codes.InvalidArgument, "expire after 1h0m0s")
	if _, err := client.CommitMessages(ctx, c, "ttl-2", payloadsFor("orders", payload)); err != nil {
		t.Fatalf("CommitMessages of a fresh payload: %v", err)
	}
}
