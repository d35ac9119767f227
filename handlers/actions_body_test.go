package handlers

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/txn"
)

// TestActionBodiesStrict: every distributed-commit action refuses a body
// whose keys encoding/json alone would accept (another case, a key twice:
// the last would win) with InvalidArgument naming the key, before it
// looks at the request. An audit proxy reading the first commit_id must
// see the id the gateway commits.
func TestActionBodiesStrict(t *testing.T) {
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: "strict", Realm: auth.DefaultRealm})
	p := &raceProvider{staged: map[string]bool{}, committed: map[string]bool{}, commits: map[string]catalogs.CommitOutcome{}}
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("strict-key"),
		Catalogs: []Catalog{{Name: "lake", Type: "iceberg", Realm: auth.DefaultRealm, Provider: p}}})
	if err != nil {
		t.Fatal(err)
	}
	table := `"catalog": "lake", "schema": "default", "table": "t"`
	for _, c := range []struct {
		action string
		run    func(context.Context, []byte) (any, error)
		body   string
		key    string
	}{
		{PrepareCommitActionType, h.prepareCommit, `{"TRANSACTION_ID": "x"}`, "TRANSACTION_ID"},
		{PrepareCommitActionType, h.prepareCommit, `{"transaction_id": "x", "transaction_id": "y"}`, "transaction_id"},
		{CommitMessagesActionType, h.commitMessages, `{"COMMIT_ID": "j", "tables": [{` + table + `, "payloads": ["AA=="]}]}`, "COMMIT_ID"},
		{CommitMessagesActionType, h.commitMessages, `{"commit_id": "audited", "commit_id": "other", "tables": [{` + table + `, "payloads": ["AA=="]}]}`, "commit_id"},
		{CommitMessagesActionType, h.commitMessages, `{"commit_id": "j", "tables": [{` + table + `, "Payloads": ["AA=="]}]}`, "tables[0].Payloads"},
		{AbortMessagesActionType, h.abortMessages, `{"Commit_Id": "j", "tables": [{` + table + `, "payloads": ["AA=="]}]}`, "Commit_Id"},
		{AbortMessagesActionType, h.abortMessages, `{"tables": [{` + table + `, "table": "u", "payloads": ["AA=="]}]}`, "tables[0].table"},
		{GetCommitStatusActionType, h.commitStatus, `{` + table + `, "COMMIT_ID": "j"}`, "COMMIT_ID"},
		{GetCommitStatusActionType, h.commitStatus, `{` + table + `, "commit_id": "j", "commit_id": "k"}`, "commit_id"},
	} {
		_, err := c.run(ctx, []byte(c.body))
		if Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"`+c.key+`"`) {
			t.Errorf("%s %s: %v (%s), want InvalidArgument naming %q", c.action, c.body, err, Code(err), c.key)
		}
	}
}
