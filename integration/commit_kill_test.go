package integration

import (
	"context"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/server"
)

// TestCommitMessagesCoordinatorKilled: three worker gateway processes
// sharing one catalog and the signing key each ingest into the same
// Iceberg table in a transaction and prepare it; a fourth process, the
// coordinator, commits the payloads and is killed (SIGKILL, by the
// test-only hook server.CrashAfterCommitEnv) after the commit landed and
// before it replied. CommitMessages retried with the same commit id on a
// restarted coordinator returns the snapshot that landed; the table has
// exactly one new snapshot, holding the commit id, and the row count does
// not change.
func TestCommitMessagesCoordinatorKilled(t *testing.T) {
	requireEngine(t)
	if testing.Short() {
		t.Skip("starts five gateway processes")
	}
	shared := t.TempDir()
	conf := sharedLake(shared, "kill-key")
	ctx := context.Background()
	var procs []*gatewayProc
	for range 3 {
		procs = append(procs, startChild(t, t.TempDir(), conf))
	}
	procs = append(procs, startChild(t, t.TempDir(), conf, server.CrashAfterCommitEnv+"=1"))

	// A table with one committed snapshot, then three prepared workers.
	w0 := procs[0].flightClient(t)
	if _, err := w0.ExecuteIngest(ctx, reader(t, people(t, 10_000, 5)), modeCreate("orders")); err != nil {
		t.Fatal(err)
	}
	base := len(sharedTable(t, shared, "orders").Metadata().Snapshots())
	var prepared [][]client.TablePayloads
	for i, p := range procs[:3] {
		payload := prepareIn(t, p.flightClient(t), modeAppend("orders"), i*100, 100)
		prepared = append(prepared, payloadsFor("orders", payload))
	}
	tables := client.Merge(prepared...)

	// The coordinator dies between the commit and the reply.
	coord := procs[3]
	_, err := client.CommitMessages(ctx, coord.flightClient(t), "job-kill", tables)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("CommitMessages on the coordinator that dies: %v, want Unavailable (no reply)", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- coord.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the coordinator still runs after CommitMessages; log:\n%s", coord.logs.String())
	}
	if ws, ok := coord.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("coordinator ended with %v, want killed by SIGKILL; log:\n%s", coord.cmd.ProcessState, coord.logs.String())
	}
	snaps := sharedTable(t, shared, "orders").Metadata().Snapshots()
	if len(snaps) != base+1 {
		t.Fatalf("%d snapshots after the killed commit, want %d: the commit did not land before the kill", len(snaps), base+1)
	}
	landed := snaps[len(snaps)-1]
	if got := landed.Summary.Properties["flightgw.commit-id"]; got != "msg-job-kill" {
		t.Fatalf("summary commit id %q, want msg-job-kill", got)
	}
	rows := func() int {
		at, err := sharedTable(t, shared, "orders").Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer at.Release()
		return int(at.NumRows())
	}
	if got := rows(); got != 305 {
		t.Fatalf("%d rows after the killed commit, want 305", got)
	}

	// Retried on a restarted coordinator: the same snapshot, nothing
	// appended.
	restarted := startChild(t, coord.dataDir, conf)
	again, err := client.CommitMessages(ctx, restarted.flightClient(t), "job-kill", tables)
	if err != nil {
		t.Fatalf("CommitMessages retried on the restarted coordinator: %v", err)
	}
	if len(again.Tables) != 1 || again.Tables[0].SnapshotID != landed.SnapshotID {
		t.Fatalf("retried CommitMessages: %+v, want snapshot %d", again, landed.SnapshotID)
	}
	if n := len(sharedTable(t, shared, "orders").Metadata().Snapshots()); n != base+1 {
		t.Fatalf("%d snapshots after the retry, want %d", n, base+1)
	}
	if got := rows(); got != 305 {
		t.Fatalf("%d rows after the retry, want 305", got)
	}
	st, err := client.GetCommitStatus(ctx, restarted.flightClient(t), "job-kill", lakeTable("orders"))
	if err != nil || !st.Landed || st.SnapshotID != landed.SnapshotID || st.Rows != 300 {
		t.Fatalf("GetCommitStatus: %+v, %v", st, err)
	}
}
