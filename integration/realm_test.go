package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/flightgw/flightgw/auth"
)

func realmConfig(t *testing.T) string {
	t.Helper()
	alice, _ := auth.HashPassword("alice-pw")
	bob, _ := auth.HashPassword("bob-pw")
	return fmt.Sprintf(`
auth:
  enabled: true
  users:
    - {name: alice, realm: sales, password_hash: "%s"}
    - {name: bob, realm: ops, password_hash: "%s"}
catalogs:
  - name: salesdb
    type: iceberg
    realm: sales
    properties: {catalog-type: sql, uri: "sqlite:///${DATA}/sales.db", warehouse: "file://${DATA}/sales", create-namespaces: default}
  - name: opsdb
    type: iceberg
    realm: ops
    properties: {catalog-type: sql, uri: "sqlite:///${DATA}/ops.db", warehouse: "file://${DATA}/ops", create-namespaces: default}
`, alice, bob)
}

// login runs the Flight handshake with Basic credentials and returns a
// client that sends the bearer token the gateway answered with.
func login(t *testing.T, g *gateway, user, pw string) (*flightsql.Client, context.Context) {
	t.Helper()
	c := g.flightClient(t)
	ctx, err := c.Client.AuthenticateBasicToken(context.Background(), user, pw)
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	if v := md.Get("authorization"); len(v) != 1 || !strings.HasPrefix(v[0], "Bearer ") {
		t.Fatalf("no bearer token after handshake: %v", md)
	}
	return c, ctx
}

func catalogNames(t *testing.T, ctx context.Context, c *flightsql.Client) []string {
	t.Helper()
	info, err := c.GetCatalogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0).(*array.String)
		for i := range col.Len() {
			out = append(out, col.Value(i))
		}
	}
	return out
}

func TestRealms(t *testing.T) {
	g := startGateway(t, realmConfig(t))
	alice, actx := login(t, g, "alice", "alice-pw")
	bob, bctx := login(t, g, "bob", "bob-pw")

	if got := catalogNames(t, actx, alice); strings.Join(got, ",") != "salesdb" {
		t.Fatalf("alice sees %v", got)
	}
	if got := catalogNames(t, bctx, bob); strings.Join(got, ",") != "opsdb" {
		t.Fatalf("bob sees %v", got)
	}

	o := modeCreate("orders")
	cat := "opsdb"
	o.Catalog = &cat
	_, err := alice.ExecuteIngest(actx, reader(t, people(t, 0, 1)), o)
	assertStatus(t, err, codes.NotFound, "opsdb")

	cat = "salesdb"
	if n, err := alice.ExecuteIngest(actx, reader(t, people(t, 0, 3)), o); err != nil || n != 3 {
		t.Fatalf("alice ingest: %d %v", n, err)
	}

	tx, err := alice.BeginTransaction(actx)
	if err != nil {
		t.Fatal(err)
	}
	// Bob cannot end Alice's transaction: for him it does not exist.
	assertStatus(t, endTransactionCtx(t, bctx, bob, tx.ID()), codes.NotFound, "transaction")
	if err := tx.Rollback(actx); err != nil {
		t.Fatal(err)
	}

	// No credentials, wrong password, forged token.
	anon := g.flightClient(t)
	_, err = anon.GetCatalogs(context.Background())
	assertStatus(t, err, codes.Unauthenticated, "authentication")
	_, err = anon.Client.AuthenticateBasicToken(context.Background(), "alice", "wrong")
	assertStatus(t, err, codes.Unauthenticated, "invalid username or password")
	forged := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer fgw1.e30.AAAA")
	_, err = anon.GetCatalogs(forged)
	assertStatus(t, err, codes.Unauthenticated, "token")

	for _, secret := range []string{"alice-pw", "bob-pw"} {
		if strings.Contains(g.logs.String(), secret) {
			t.Fatalf("a password reached the logs")
		}
	}
	md, _ := metadata.FromOutgoingContext(actx)
	if tok := strings.TrimPrefix(md.Get("authorization")[0], "Bearer "); strings.Contains(g.logs.String(), tok) {
		t.Fatalf("a bearer token reached the logs")
	}
}

func endTransactionCtx(t *testing.T, ctx context.Context, c *flightsql.Client, id []byte) error {
	t.Helper()
	body := mustAny(t, &pb.ActionEndTransactionRequest{TransactionId: id, Action: pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT})
	stream, err := c.Client.DoAction(ctx, &flight.Action{Type: flightsql.EndTransactionActionType, Body: body})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

func TestADBCWithPassword(t *testing.T) {
	g := startGateway(t, realmConfig(t))
	cnxn := g.adbcConn(t, map[string]string{adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "alice-pw"})
	n, err := ingest(t, cnxn, "viaadbc", adbc.OptionValueIngestModeCreate, people(t, 0, 4),
		adbc.OptionValueIngestTargetCatalog, "salesdb")
	if err != nil || n != 4 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	// Alice's realm has no catalog "opsdb".
	_, err = ingest(t, cnxn, "viaadbc", adbc.OptionValueIngestModeCreate, people(t, 0, 4),
		adbc.OptionValueIngestTargetCatalog, "opsdb")
	assertADBC(t, err, adbc.StatusNotFound, "opsdb")

	drv := adbcflight.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + g.addr, adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if c, err := db.Open(context.Background()); err == nil {
		c.Close()
		t.Fatal("wrong password accepted")
	} else {
		assertADBC(t, err, adbc.StatusUnauthenticated, "password")
	}
}
