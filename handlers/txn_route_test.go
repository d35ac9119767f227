package handlers

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightgw/flightgw/txn"
)

func replicaHandler(t testing.TB, key, advertise string) *Handler {
	t.Helper()
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte(key), Advertise: advertise})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func packed(t testing.TB, m proto.Message) []byte {
	t.Helper()
	var a anypb.Any
	if err := a.MarshalFrom(m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRoute: a call naming a transaction another replica began, in any
// of the places a Flight SQL call names one, is routed to that replica;
// one begun here, one with no transaction, one from a replica with
// another key, and an unparsable request are served here; without
// Advertise nothing is routed.
func TestRoute(t *testing.T) {
	here := replicaHandler(t, "k", "10.0.0.1:32010")
	there := replicaHandler(t, "k", "10.0.0.2:32010")
	stranger := replicaHandler(t, "other-key", "10.0.0.3:32010")
	theirs, err := there.newTxnID()
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := here.newTxnID()
	forged, _ := stranger.newTxnID()
	if !strings.HasPrefix(theirs, "fgwt1.") {
		t.Fatalf("id %q", theirs)
	}
	handle, err := there.signPreparedHandle(preparedHandle{ID: "s", SQL: "SELECT 1", Owner: "o", TxnID: []byte(theirs)})
	if err != nil {
		t.Fatal(err)
	}
	tkt, err := there.signTicket(ticket{ID: "q", SQL: "SELECT 1", Owner: "o", Expires: time.Now().Add(time.Minute).Unix(), TxnID: theirs})
	if err != nil {
		t.Fatal(err)
	}
	desc := func(m proto.Message) *flight.FlightDescriptor {
		return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: packed(t, m)}
	}
	routed := map[string]proto.Message{
		"EndTransaction": &flight.Action{Type: flightsql.EndTransactionActionType,
			Body: packed(t, &pb.ActionEndTransactionRequest{TransactionId: []byte(theirs)})},
		"CreatePreparedStatement": &flight.Action{Type: flightsql.CreatePreparedStatementActionType,
			Body: packed(t, &pb.ActionCreatePreparedStatementRequest{Query: "SELECT 1", TransactionId: []byte(theirs)})},
		"CommandStatementQuery":          desc(&pb.CommandStatementQuery{Query: "SELECT 1", TransactionId: []byte(theirs)}),
		"CommandStatementUpdate":         desc(&pb.CommandStatementUpdate{Query: "INSERT", TransactionId: []byte(theirs)}),
		"CommandStatementIngest":         &flight.FlightData{FlightDescriptor: desc(&pb.CommandStatementIngest{Table: "t", TransactionId: []byte(theirs)})},
		"CommandPreparedStatementQuery":  desc(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle}),
		"CommandPreparedStatementUpdate": &flight.FlightData{FlightDescriptor: desc(&pb.CommandPreparedStatementUpdate{PreparedStatementHandle: handle})},
		"query ticket":                   &flight.Ticket{Ticket: packed(t, &pb.TicketStatementQuery{StatementHandle: tkt})},
	}
	for name, m := range routed {
		if got := here.Route(m); got != "10.0.0.2:32010" {
			t.Errorf("%s: routed to %q, want 10.0.0.2:32010", name, got)
		}
		if got := there.Route(m); got != "" {
			t.Errorf("%s: the holding replica routes it to %q", name, got)
		}
		if got := replicaHandler(t, "k", "").Route(m); got != "" {
			t.Errorf("%s: routed to %q without cluster.advertise", name, got)
		}
	}
	served := map[string]proto.Message{
		"begun here":       desc(&pb.CommandStatementQuery{Query: "SELECT 1", TransactionId: []byte(ours)}),
		"no transaction":   desc(&pb.CommandStatementQuery{Query: "SELECT 1"}),
		"another key":      desc(&pb.CommandStatementQuery{Query: "SELECT 1", TransactionId: []byte(forged)}),
		"a plain id":       desc(&pb.CommandStatementQuery{Query: "SELECT 1", TransactionId: []byte("0123abcd")}),
		"not a command":    &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("junk")},
		"a path":           &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"t"}},
		"BeginTransaction": &flight.Action{Type: flightsql.BeginTransactionActionType, Body: packed(t, &pb.ActionBeginTransactionRequest{})},
		"bad ticket":       &flight.Ticket{Ticket: []byte("junk")},
		"empty data":       &flight.FlightData{},
	}
	for name, m := range served {
		if got := here.Route(m); got != "" {
			t.Errorf("%s: routed to %q, want served here", name, got)
		}
	}
}

// FuzzRoute: no request makes Route panic, and only a transaction id a
// replica with the same key signed routes anywhere, to the replica it
// names.
func FuzzRoute(f *testing.F) {
	here := replicaHandler(f, "k", "10.0.0.1:32010")
	there := replicaHandler(f, "k", "10.0.0.2:32010")
	theirs, _ := there.newTxnID()
	f.Add(uint8(0), packed(f, &pb.ActionEndTransactionRequest{TransactionId: []byte(theirs)}))
	f.Add(uint8(1), packed(f, &pb.CommandStatementIngest{TransactionId: []byte(theirs)}))
	f.Add(uint8(2), packed(f, &pb.TicketStatementQuery{StatementHandle: []byte("fgw1.e30.AAAA")}))
	f.Add(uint8(1), []byte("fgwt1.."))
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		var m proto.Message
		switch kind % 4 {
		case 0:
			m = &flight.Action{Type: flightsql.EndTransactionActionType, Body: b}
		case 1:
			m = &flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}}
		case 2:
			m = &flight.Ticket{Ticket: b}
		default:
			m = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}
		}
		if got := here.Route(m); got != "" && got != "10.0.0.2:32010" {
			t.Fatalf("routed to %q, an address no replica with the key signed", got)
		}
	})
}
