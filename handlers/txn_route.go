package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// A transaction lives in the gateway process that began it: its staged
// receipts are in that process's memory. In a cluster (Options.Advertise
// set) its id names that replica, signed with the ticket key, and any
// other replica forwards a call that names the transaction there (Route),
// so that a load balancer may send each call anywhere.

// txnPrefix marks a transaction id that names its replica.
const txnPrefix = "fgwt1."

// txnTag is the payload of such an id.
type txnTag struct {
	// N makes the id unique.
	N string `json:"n"`
	// Replica is the address of the gateway that holds the transaction
	// (its Options.Advertise).
	Replica string `json:"replica"`
}

// newTxnID is the id of a transaction begun here: signed and naming this
// replica in a cluster, random otherwise.
func (h *Handler) newTxnID() (string, error) {
	n := make([]byte, 16)
	_, _ = rand.Read(n)
	if h.opts.Advertise == "" {
		return hex.EncodeToString(n), nil
	}
	id, err := h.sign(txnPrefix, txnTag{N: hex.EncodeToString(n), Replica: h.opts.Advertise})
	return string(id), err
}

// txnReplica is the replica holding transaction id, when the id names
// another one than this gateway (with a valid signature); "" otherwise.
func (h *Handler) txnReplica(id []byte) string {
	if h.opts.Advertise == "" || !strings.HasPrefix(string(id), txnPrefix) {
		return ""
	}
	var tag txnTag
	if err := h.verify(id, txnPrefix, "transaction id", &tag); err != nil || tag.Replica == h.opts.Advertise {
		return ""
	}
	return tag.Replica
}

// Route tells where a call must be served: the address of the replica
// holding the transaction the call names, or "" to serve it here. first
// is the call's request (the Action of DoAction, the FlightDescriptor of
// GetFlightInfo, GetSchema and PollFlightInfo, the Ticket of DoGet, the
// first FlightData of DoPut). A call that names no transaction, names one
// held here, or cannot be parsed is served here, where it is answered as
// usual.
func (h *Handler) Route(first proto.Message) string {
	if h.opts.Advertise == "" {
		return ""
	}
	id := h.txnOf(first)
	if len(id) == 0 {
		return ""
	}
	return h.txnReplica(id)
}

// txnOf is the transaction id a request names, if any.
func (h *Handler) txnOf(m proto.Message) []byte {
	switch m := m.(type) {
	case *flight.Action:
		if m.GetType() == PrepareCommitActionType {
			var req prepareRequest
			if json.Unmarshal(m.GetBody(), &req) != nil {
				return nil
			}
			return []byte(req.TransactionID)
		}
		var req interface{ GetTransactionId() []byte }
		switch m.GetType() {
		case flightsql.EndTransactionActionType:
			req = &pb.ActionEndTransactionRequest{}
		case flightsql.CreatePreparedStatementActionType:
			req = &pb.ActionCreatePreparedStatementRequest{}
		default:
			return nil
		}
		if !unpack(m.GetBody(), req.(proto.Message)) {
			return nil
		}
		return req.GetTransactionId()
	case *flight.FlightData:
		return h.txnOfCommand(m.GetFlightDescriptor().GetCmd())
	case *flight.FlightDescriptor:
		return h.txnOfCommand(m.GetCmd())
	case *flight.Ticket:
		var tq pb.TicketStatementQuery
		if !unpack(m.GetTicket(), &tq) {
			return nil
		}
		var t ticket
		if h.verify(tq.GetStatementHandle(), ticketPrefix, "ticket", &t) != nil {
			return nil
		}
		return []byte(t.TxnID)
	}
	return nil
}

// txnOfCommand is the transaction id a Flight SQL command names: in its
// transaction_id field, or in the prepared statement handle it carries.
func (h *Handler) txnOfCommand(cmd []byte) []byte {
	var a anypb.Any
	if len(cmd) == 0 || proto.Unmarshal(cmd, &a) != nil {
		return nil
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil
	}
	switch c := msg.(type) {
	case *pb.CommandStatementQuery:
		return c.GetTransactionId()
	case *pb.CommandStatementUpdate:
		return c.GetTransactionId()
	case *pb.CommandStatementIngest:
		return c.GetTransactionId()
	case *pb.CommandPreparedStatementQuery:
		return h.handleTxn(c.GetPreparedStatementHandle())
	case *pb.CommandPreparedStatementUpdate:
		return h.handleTxn(c.GetPreparedStatementHandle())
	}
	return nil
}

// handleTxn is the transaction a prepared statement handle was created
// in.
func (h *Handler) handleTxn(raw []byte) []byte {
	var ph preparedHandle
	if h.verify(raw, preparedPrefix, "prepared statement handle", &ph) != nil {
		return nil
	}
	return ph.TxnID
}

// unpack decodes an Any-wrapped message of the type of into.
func unpack(b []byte, into proto.Message) bool {
	var a anypb.Any
	if proto.Unmarshal(b, &a) != nil {
		return false
	}
	return a.UnmarshalTo(into) == nil
}
