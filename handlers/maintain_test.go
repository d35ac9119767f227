package handlers

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/actions"
	"github.com/flightgw/flightgw/txn"
)

// maintainProvider is a Maintainer that records the requests it gets.
type maintainProvider struct {
	*raceProvider
	mu   sync.Mutex
	got  []catalogs.MaintainRequest
	tbls []catalogs.TableIdent
}

func (m *maintainProvider) MaintainTasks() []string { return []string{catalogs.TaskExpireSnapshots} }

func (m *maintainProvider) Maintain(_ context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.MaintainReport, error) {
	tasks, err := catalogs.MaintainTasksOf(t, req, m.MaintainTasks())
	if err != nil {
		return catalogs.MaintainReport{}, err
	}
	m.mu.Lock()
	m.got, m.tbls = append(m.got, req), append(m.tbls, t)
	m.mu.Unlock()
	rep := catalogs.MaintainReport{}
	for _, task := range tasks {
		rep.Tasks = append(rep.Tasks, catalogs.TaskReport{Task: task, Committed: !req.DryRun, ExpiredSnapshots: []int64{7}, DataFiles: 2})
	}
	return rep, nil
}

// TestMaintainTable: the action decodes strictly, resolves the table in
// the caller's realm only, refuses a catalog that runs no maintenance
// and an unknown task with their codes, and hands the backend the live
// transactions' files (Held) and a floor no shorter than the commit
// messages' TTL.
func TestMaintainTable(t *testing.T) {
	mp := &maintainProvider{raceProvider: &raceProvider{staged: map[string]bool{}, committed: map[string]bool{}, commits: map[string]catalogs.CommitOutcome{}}}
	plain := &raceProvider{staged: map[string]bool{}, committed: map[string]bool{}, commits: map[string]catalogs.CommitOutcome{}}
	const ttl = 3 * time.Hour
	h, err := New(Options{Txns: txn.NewManager(time.Minute, nil), TicketKey: []byte("maintain-key"), CommitMessageTTL: ttl,
		Catalogs: []Catalog{
			{Name: "lake", Type: "iceberg", Realm: auth.DefaultRealm, Provider: mp},
			{Name: "plain", Type: "iceberg", Realm: auth.DefaultRealm, Provider: plain},
			{Name: "other", Type: "iceberg", Realm: "elsewhere", Provider: mp},
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := auth.NewContext(context.Background(), auth.Principal{Name: "op", Realm: auth.DefaultRealm})
	for _, c := range []struct {
		body string
		code codes.Code
		name string // the error names it
	}{
		{`{"catalog": "lake", "schema": "default", "table": "t", "Tasks": []}`, codes.InvalidArgument, "Tasks"},
		{`{"catalog": "lake", "schema": "default", "table": "t", "dry_run": true, "dry_run": false}`, codes.InvalidArgument, "dry_run"},
		{`{"catalog": "lake", "schema": "default", "table": "t", "tasks": ["compact_everything"]}`, codes.InvalidArgument, "compact_everything"},
		{`{"catalog": "plain", "schema": "default", "table": "t"}`, codes.FailedPrecondition, "plain"},
		{`{"catalog": "other", "schema": "default", "table": "t"}`, codes.NotFound, "other"},
		{`{"catalog": "lake", "schema": "default", "table": ""}`, codes.InvalidArgument, "table"},
	} {
		_, err := h.maintainTable(ctx, []byte(c.body))
		if Code(err) != c.code || !strings.Contains(err.Error(), c.name) {
			t.Errorf("MaintainTable %s: %v (%s), want %s naming %q", c.body, err, Code(err), c.code, c.name)
		}
	}
	if len(mp.got) != 0 {
		t.Fatalf("refused requests reached the backend: %+v", mp.got)
	}
	res, err := h.maintainTable(ctx, []byte(`{"catalog": "lake", "schema": "default", "table": "t", "tasks": ["expire_snapshots"], "dry_run": true}`))
	if err != nil {
		t.Fatalf("MaintainTable: %v", err)
	}
	r := res.(actions.MaintainResponse)
	if !r.DryRun || r.Table != "t" || len(r.Tasks) != 1 || r.Tasks[0].Task != catalogs.TaskExpireSnapshots || r.Tasks[0].Committed ||
		r.Tasks[0].DataFiles != 2 || len(r.Tasks[0].ExpiredSnapshots) != 1 {
		t.Errorf("reply = %+v", r)
	}
	if len(mp.got) != 1 {
		t.Fatalf("backend got %d requests, want 1", len(mp.got))
	}
	got := mp.got[0]
	if !got.DryRun || got.Held == nil || got.ReplayWindow < ttl {
		t.Errorf("backend request = %+v: want a dry run, Held set and ReplayWindow >= %s", got, ttl)
	}
	if id := mp.tbls[0]; id.Catalog != "lake" || strings.Join(id.Namespace, ".") != "default" || id.Name != "t" {
		t.Errorf("backend table = %v", id)
	}
}
