package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestFrontServe: the binaries as `make build` makes them. `flightgw
// serve` (the light front) becomes flightgw-server in the same process,
// with the arguments and the environment it was given, serves, and stops
// cleanly on a SIGTERM sent to the PID its caller started; both report
// the version set at build time.
func TestFrontServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	bin := t.TempDir()
	const ldflags = "-X github.com/flightgw/flightgw/internal/version.Version=v0.0.0-fronttest"
	for _, pkg := range []string{"flightgw", "flightgw-server"} {
		// GOFLAGS (the engine's tag under make) is inherited.
		out, err := exec.Command(goTool, "build", "-ldflags", ldflags, "-o", filepath.Join(bin, pkg), "github.com/flightgw/flightgw/cmd/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", pkg, err, out)
		}
	}
	front := filepath.Join(bin, "flightgw")
	if out, err := exec.Command(front, "version").Output(); err != nil || !strings.HasPrefix(string(out), "flightgw v0.0.0-fronttest ") {
		t.Fatalf("flightgw version: %q %v", out, err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(front, "serve", "--data-dir", t.TempDir())
	// The address through the environment: the front passes it on.
	cmd.Env = append(os.Environ(), "FLIGHTGW_LISTEN="+addr)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// A group of its own, killed whole at cleanup: a front that ran the
	// gateway as a child instead of becoming it would leave it serving.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	waitUntil(t, "the gateway serves on "+addr, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, logs)
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"); err == nil && filepath.Base(exe) != "flightgw-server" {
		t.Fatalf("the started PID runs %s, want flightgw-server", exe)
	}
	if !strings.Contains(logs.String(), "version=v0.0.0-fronttest") {
		t.Fatalf("the gateway does not log the version set at build time:\n%s", logs.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("after SIGTERM the gateway exited with %v; log:\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the gateway did not stop on SIGTERM; log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "flightgw stopped") {
		t.Fatalf("no clean stop in the log:\n%s", logs.String())
	}
}
