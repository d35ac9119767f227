// Package client calls flightgw's distributed-commit Flight actions from
// Go (docs/commit-messages.md): workers end their transactions with
// PrepareCommit, the coordinator gathers every worker's payloads (Merge)
// and commits them once with CommitMessages, or deletes their files with
// AbortMessages; GetCommitStatus resolves a commit whose reply was lost.
// MaintainTable runs an operator's table maintenance (docs/maintenance.md).
//
// Each function makes one DoAction on a *flightsql.Client; ctx carries the
// caller's credentials (gRPC metadata) as for any other call. A refusal is
// the gateway's gRPC status, unchanged: status.Code(err) tells
// InvalidArgument (a bad payload, named in the message) from Unavailable
// (retry CommitMessages with the same commit id, or ask GetCommitStatus).
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightgw/flightgw/codec/actions"
)

// TablePayloads are the payloads of one table, as PrepareCommit hands
// them out and CommitMessages takes them. Rows counts the rows they hold,
// for the caller's bookkeeping; the gateway does not read it.
type TablePayloads struct {
	actions.TableRef
	Payloads [][]byte
	Rows     uint64
}

// PrepareCommit ends the transaction txnID (empty: the one open in the
// session) prepared, without committing it, and returns one signed
// payload per table it wrote to.
func PrepareCommit(ctx context.Context, c *flightsql.Client, txnID string) ([]TablePayloads, error) {
	var res actions.PrepareResponse
	if err := do(ctx, c, actions.PrepareCommit, actions.PrepareRequest{TransactionID: txnID}, &res); err != nil {
		return nil, err
	}
	out := make([]TablePayloads, len(res.Tables))
	for i, t := range res.Tables {
		out[i] = TablePayloads{TableRef: t.TableRef, Payloads: [][]byte{t.Payload}, Rows: t.Rows}
	}
	return out, nil
}

// Merge gathers the payloads of several workers into one list per table,
// in first-seen order, as CommitMessages wants them (a table listed twice
// is refused).
func Merge(lists ...[]TablePayloads) []TablePayloads {
	var out []TablePayloads
	at := map[actions.TableRef]int{}
	for _, l := range lists {
		for _, t := range l {
			i, ok := at[t.TableRef]
			if !ok {
				i = len(out)
				at[t.TableRef] = i
				out = append(out, TablePayloads{TableRef: t.TableRef})
			}
			out[i].Payloads = append(out[i].Payloads, t.Payloads...)
			out[i].Rows += t.Rows
		}
	}
	return out
}

// CommitMessages commits every table's payloads once, in one snapshot per
// table, under commitID. Repeated with the same commitID after a lost
// reply (on any replica sharing the signing key), it returns the same
// snapshots and appends nothing.
func CommitMessages(ctx context.Context, c *flightsql.Client, commitID string, tables []TablePayloads) (actions.CommitResponse, error) {
	var res actions.CommitResponse
	err := do(ctx, c, actions.CommitMessages, actions.CommitRequest{CommitID: commitID, Tables: messages(tables)}, &res)
	return res, err
}

// AbortMessages deletes the staged files the payloads name. Given the
// commitID they were tried under (or ""), a table on which it landed is
// refused and nothing is deleted.
func AbortMessages(ctx context.Context, c *flightsql.Client, commitID string, tables []TablePayloads) (actions.AbortResponse, error) {
	var res actions.AbortResponse
	err := do(ctx, c, actions.AbortMessages, actions.AbortRequest{CommitID: commitID, Tables: messages(tables)}, &res)
	return res, err
}

// GetCommitStatus tells whether commitID has landed on table, and in
// which snapshot.
func GetCommitStatus(ctx context.Context, c *flightsql.Client, commitID string, table actions.TableRef) (actions.StatusResponse, error) {
	var res actions.StatusResponse
	err := do(ctx, c, actions.GetCommitStatus, actions.StatusRequest{TableRef: table, CommitID: commitID}, &res)
	return res, err
}

// MaintainTable runs table maintenance on req's table (the operator's
// action, docs/maintenance.md): req.Tasks, or every task its catalog
// runs; with req.DryRun only what they would do.
func MaintainTable(ctx context.Context, c *flightsql.Client, req actions.MaintainRequest) (actions.MaintainResponse, error) {
	var res actions.MaintainResponse
	err := do(ctx, c, actions.MaintainTable, req, &res)
	return res, err
}

func messages(tables []TablePayloads) []actions.TableMessages {
	out := make([]actions.TableMessages, len(tables))
	for i, t := range tables {
		out[i] = actions.TableMessages{TableRef: t.TableRef, Payloads: t.Payloads}
	}
	return out
}

// do runs one action with a JSON body and decodes its one JSON result.
func do(ctx context.Context, c *flightsql.Client, action string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: encode the request: %w", action, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream if it is not read to its end
	stream, err := c.Client.DoAction(ctx, &flight.Action{Type: action, Body: body})
	if err != nil {
		return err
	}
	res, err := stream.Recv()
	if err != nil {
		return err
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("more than one result")
		}
		return fmt.Errorf("%s: after the reply: %w", action, err)
	}
	if err := json.Unmarshal(res.GetBody(), out); err != nil {
		return fmt.Errorf("%s: decode the reply: %w", action, err)
	}
	return nil
}
