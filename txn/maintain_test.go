package txn

import (
	"context"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// slowMaintainer is a recorder that maintains tables, holding each run
// until release is closed.
type slowMaintainer struct {
	*recorder
	started chan catalogs.MaintainRequest
	release chan struct{}
}

func (s *slowMaintainer) MaintainTasks() []string { return []string{catalogs.TaskExpireSnapshots} }

func (s *slowMaintainer) Maintain(_ context.Context, _ catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.MaintainReport, error) {
	s.started <- req
	<-s.release
	return catalogs.MaintainReport{Tasks: []catalogs.TaskReport{{Task: catalogs.TaskExpireSnapshots}}}, nil
}

// TestMaintainPolicy: a backend that maintains nothing is
// FailedPrecondition; a second run on a table while one is under way is
// FailedPrecondition, one on another table is not; the replay window is
// never below the commit messages' TTL (the default one when none is
// given) plus twice the clock skew, the commit window never below the
// lookup's timeout plus the skew, whatever the request asks; the report
// carries the request's dry run.
func TestMaintainPolicy(t *testing.T) {
	m := NewManager(time.Minute, nil)
	defer m.Close()
	ctx := context.Background()
	a := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: "a"}
	b := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: "b"}
	_, err := m.Maintain(ctx, MaintainJob{Table: a, Provider: &recorder{committed: map[string][]string{}}})
	if catalogs.Kind(err) != catalogs.ErrFailedPrecondition {
		t.Errorf("a backend without maintenance: %v, want FailedPrecondition", err)
	}
	s := &slowMaintainer{recorder: &recorder{committed: map[string][]string{}}, started: make(chan catalogs.MaintainRequest, 2), release: make(chan struct{})}
	first := make(chan catalogs.MaintainReport, 1)
	go func() {
		rep, _ := m.Maintain(ctx, MaintainJob{Table: a, Provider: s, Request: catalogs.MaintainRequest{DryRun: true, KeepNewerThan: time.Second}})
		first <- rep
	}()
	req := <-s.started
	if want := DefaultMessageTTL + 2*MaxClockSkew; req.ReplayWindow != want || req.Held == nil || req.Replayable == nil {
		t.Errorf("backend request = %+v, want ReplayWindow %v, Replayable and Held set", req, want)
	}
	if want := lookupTimeout + MaxClockSkew; req.CommitWindow != want || req.KeepNewerThan != time.Second {
		t.Errorf("backend request = %+v, want CommitWindow %v and the caller's KeepNewerThan", req, want)
	}
	if _, err := m.Maintain(ctx, MaintainJob{Table: a, Provider: s}); catalogs.Kind(err) != catalogs.ErrFailedPrecondition {
		t.Errorf("a second run on the same table: %v, want FailedPrecondition", err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := m.Maintain(ctx, MaintainJob{Table: b, Provider: s, MessageTTL: 30 * time.Hour})
		second <- err
	}()
	if req := <-s.started; req.ReplayWindow != 30*time.Hour+2*MaxClockSkew || req.Floor() != req.ReplayWindow {
		t.Errorf("floor with a 30h TTL = %v (floor %v)", req.ReplayWindow, req.Floor())
	}
	close(s.release)
	if rep := <-first; !rep.DryRun {
		t.Errorf("report = %+v, want the dry run marked", rep)
	}
	if err := <-second; err != nil {
		t.Errorf("run on another table: %v", err)
	}
	s.release = make(chan struct{})
	close(s.release)
	go func() { <-s.started }()
	if _, err := m.Maintain(ctx, MaintainJob{Table: a, Provider: s}); err != nil {
		t.Errorf("a run after the first ended: %v", err)
	}
}

// TestReplayable: only an auto-commit write's random commit id is one no
// client can send again.
func TestReplayable(t *testing.T) {
	for id, want := range map[string]bool{
		autoCommitPrefix + randomID():                  false,
		messageCommitPrefix + "job-42":                 true,
		IdempotencyCommitID("realm", "alice", "key-1"): true,
		(&Txn{id: "abc"}).CommitID():                   true,
		"spark-app-1":                                  true,
	} {
		if got := Replayable(id); got != want {
			t.Errorf("Replayable(%q) = %v, want %v", id, got, want)
		}
	}
}
