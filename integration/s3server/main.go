// Command s3server is an S3 server for tests that cross a process: gofakes3
// on memory, listening on 127.0.0.1, path-style, with the buckets it is
// told to create. The in-process tests (catalogs/paimon, catalogs/iceberg)
// start gofakes3 themselves; this is the same server for Paimon Java,
// pypaimon and the gateway to share (make paimon-s3-check).
//
//	s3server [-addr 127.0.0.1:0] [-bucket lake] [-timeout 5m] [-v] [-- command args...]
//
// With a command, s3server starts it with the server's address in
// S3_ENDPOINT (and fixed test credentials in AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION), waits for it (killing it after
// -timeout), stops and exits with its status: the server lives exactly as
// long as the test that needs it, and a reader that hangs on a bad file
// fails the check instead of stalling it.
// Without one, it prints the endpoint and serves until SIGINT or SIGTERM.
//
// gofakes3 1.2.0 honours If-None-Match: * on PUT (412 when the key
// exists), the conditional put of the gateway's Paimon commits, and takes
// multipart parts under S3's 5 MiB minimum. It stores an aws-chunked body
// with trailing checksums as it came: the writers here send none (the
// gateway asks its SDK for checksums only where S3 requires them; Paimon
// Java's S3A sends unsigned plain payloads over http), and one that did
// would show as unreadable files, not pass unnoticed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// The credentials handed to the command: gofakes3 checks no signature, but
// every client wants some.
const (
	testAccessKey = "flightgw-test-access-key"
	testSecretKey = "flightgw-test-secret-key"
	testRegion    = "us-east-1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (127.0.0.1 only)")
	buckets := flag.String("bucket", "lake", "comma-separated buckets to create")
	verbose := flag.Bool("v", false, "log every request")
	timeout := flag.Duration("timeout", 0, "kill the command after this long (0: no limit)")
	flag.Parse()
	os.Exit(run(*addr, strings.Split(*buckets, ","), *verbose, *timeout, flag.Args()))
}

func run(addr string, buckets []string, verbose bool, timeout time.Duration, cmd []string) int {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || (host != "127.0.0.1" && host != "localhost") {
		log.Printf("s3server: -addr %q: listen on 127.0.0.1 only", addr)
		return 2
	}
	h, err := newHandler(buckets, verbose)
	if err != nil {
		log.Printf("s3server: %v", err)
		return 2
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Printf("s3server: %v", err)
		return 2
	}
	endpoint := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("s3server: %v", err)
		}
	}()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()

	if len(cmd) == 0 {
		fmt.Println(endpoint)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		return 0
	}
	env := []string{"S3_ENDPOINT=" + endpoint, "AWS_ACCESS_KEY_ID=" + testAccessKey,
		"AWS_SECRET_ACCESS_KEY=" + testSecretKey, "AWS_REGION=" + testRegion}
	return runCommand(cmd, env, timeout)
}

// runCommand runs cmd with env added, in a process group of its own, so
// that a timeout stops it whole (a Maven run with its JVM, pytest) rather
// than leaving a hung reader behind; SIGINT and SIGTERM are passed on to
// the group. It returns the command's exit status, 124 on a timeout.
func runCommand(cmd, env []string, timeout time.Duration) int {
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := c.Start(); err != nil {
		log.Printf("s3server: %s: %v", cmd[0], err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &ee) && ee.ExitCode() > 0:
				return ee.ExitCode()
			}
			log.Printf("s3server: %s: %v", cmd[0], err)
			return 1
		case s := <-sig:
			_ = syscall.Kill(-c.Process.Pid, s.(syscall.Signal))
		case <-expired:
			log.Printf("s3server: %s still running after -timeout %v: killed", cmd[0], timeout)
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-done
			return 124
		}
	}
}

// newHandler is gofakes3 on memory with the buckets made: path-style (a
// bucket is the first path segment), no bucket made on the fly.
func newHandler(buckets []string, verbose bool) (http.Handler, error) {
	be := s3mem.New()
	for _, b := range buckets {
		if b = strings.TrimSpace(b); b != "" {
			if err := be.CreateBucket(b); err != nil {
				return nil, fmt.Errorf("bucket %q: %w", b, err)
			}
		}
	}
	var h http.Handler = gofakes3.New(be, gofakes3.WithAutoBucket(false)).Server()
	if verbose {
		h = logRequests(h)
	}
	return h, nil
}

func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: 200}
		h.ServeHTTP(rec, r)
		log.Printf("s3server: %s %s (%s) -> %d", r.Method, r.URL.RequestURI(), r.Header.Get("X-Amz-Content-Sha256"), rec.code)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}
