package benchutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Gateway is a flightgw process listening on loopback.
type Gateway struct {
	// Addr is host:port of its Flight SQL listener.
	Addr string
	cmd  *exec.Cmd
}

// StartGateway runs `bin serve args... --listen <a free loopback port>`
// with FLIGHTGW_LOG_LEVEL=warn and env added to this process's
// environment, and waits until it listens (at most about 30s).
func StartGateway(bin string, env []string, args ...string) (*Gateway, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, append(append([]string{"serve"}, args...), "--listen", addr)...)
	cmd.Env = append(append(os.Environ(), "FLIGHTGW_LOG_LEVEL=warn"), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Gateway{Addr: addr, cmd: cmd}
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return g, nil
		}
		if i > 600 {
			g.Stop()
			return nil, fmt.Errorf("gateway did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pid is the gateway's process id.
func (g *Gateway) Pid() int { return g.cmd.Process.Pid }

// Stop interrupts the gateway (it drains and exits) and waits for it.
func (g *Gateway) Stop() {
	_ = g.cmd.Process.Signal(os.Interrupt)
	_ = g.cmd.Wait()
}

// PeakRSS reads the gateway's VmHWM (peak resident set) from /proc, in
// bytes.
func (g *Gateway) PeakRSS() (int64, error) {
	pid := g.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}

// CPU is the gateway's user and system CPU time so far, from
// /proc/pid/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux):
// a cost that the load of a shared machine inflates less than wall time.
func (g *Gateway) CPU() (time.Duration, error) {
	pid := g.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad cpu fields", pid)
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// Database is an ADBC Go driver database on the gateway at addr.
func Database(addr string) (adbc.Database, error) {
	return adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
}

// Ingest sends src (total rows) to the gateway at addr as one ADBC bulk
// ingest with the statement options opts, and times it, connection
// set-up excluded.
func Ingest(ctx context.Context, addr string, opts map[string]string, src array.RecordReader, total int64) (time.Duration, error) {
	db, err := Database(addr)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return 0, err
	}
	defer cnxn.Close()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	for k, v := range opts {
		if err := stmt.SetOption(k, v); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if err := stmt.BindStream(ctx, src); err != nil {
		return 0, err
	}
	n, err := stmt.ExecuteUpdate(ctx)
	if err != nil {
		return 0, err
	}
	dur := time.Since(start)
	if n != total {
		return 0, fmt.Errorf("gateway ingested %d rows, want %d", n, total)
	}
	return dur, nil
}
