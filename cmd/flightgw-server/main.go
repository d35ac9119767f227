// Command flightgw-server is the flightgw gateway: the binary that links
// the backends, the SQL engine and the Flight SQL server. `flightgw serve`
// (cmd/flightgw, the light front) replaces itself with it; it runs every
// command of the front as well:
//
//	flightgw-server serve [--listen ADDR] [--data-dir DIR] [--config FILE] [--insecure]
//	flightgw-server version | hash-password | hash-token | messages inspect|encode ...
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	_ "github.com/flightgw/flightgw/catalogs/delta"     // registers the delta backend
	_ "github.com/flightgw/flightgw/catalogs/flightsql" // registers the flightsql backend
	_ "github.com/flightgw/flightgw/catalogs/iceberg"   // registers the iceberg backend
	_ "github.com/flightgw/flightgw/catalogs/paimon"    // registers the paimon backend
	_ "github.com/flightgw/flightgw/catalogs/starrocks" // registers the starrocks backend
	"github.com/flightgw/flightgw/internal/cli"
	"github.com/flightgw/flightgw/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Run(args, stdin, stdout, stderr, func(args []string) int { return runServe(args[1:], stdout, stderr) })
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	// Help that was asked for goes to stdout (flightgw serve --help | less);
	// the usage after a bad flag goes to stderr with the error.
	var usage bytes.Buffer
	fs.SetOutput(&usage)
	listen := fs.String("listen", "", "address to listen on (default "+server.DefaultListen+"; env FLIGHTGW_LISTEN)")
	dataDir := fs.String("data-dir", "", "directory of the embedded catalog (default "+server.DefaultDataDir+"; env FLIGHTGW_DATA_DIR)")
	configPath := fs.String("config", "", "YAML configuration file (see docs/configuration.md)")
	insecure := fs.Bool("insecure", false, "allow listening on a non-loopback address without authentication (the gRPC listener, and health.listen with health.public)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flightgw serve [flags]\n\nFlags override the configuration file and the environment (%s).\n\n",
			strings.Join(server.EnvVars, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = usage.WriteTo(stdout)
			return 0
		}
		_, _ = usage.WriteTo(stderr)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flightgw serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	// Flags win over the environment and the file.
	cfg, err := server.LoadConfig(*configPath, func(c *server.Config) {
		if *listen != "" {
			c.Listen = *listen
		}
		if *dataDir != "" {
			c.DataDir = *dataDir
		}
		if *insecure {
			c.Insecure = true
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "flightgw: invalid configuration:\n%v\n", err)
		return 2
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "flightgw: data dir: %v\n", err)
		return 1
	}
	log := newLogger(cfg.Log, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, cfg, log, func(l server.Listening) { banner(stdout, l, cfg.DataDir) }); err != nil {
		log.Error("flightgw failed", "err", err)
		return 1
	}
	return 0
}

func newLogger(c server.LogConfig, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// banner tells whoever started the gateway by hand (make run) the next
// step: where it listens, a client line to paste, where the data lives.
// It goes to stdout, apart from the log on stderr.
func banner(w io.Writer, l server.Listening, dataDir string) {
	host, port, err := net.SplitHostPort(l.Addr.String())
	if err != nil {
		return
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // listening on every address: this machine is one
	}
	scheme := "grpc"
	if l.TLS {
		scheme = "grpc+tls"
	}
	uri := scheme + "://" + net.JoinHostPort(host, port)
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	fmt.Fprintf(w, "\nflightgw is listening on %s (Ctrl-C stops it)\n", uri)
	fmt.Fprintf(w, "data: %s\n", dataDir)
	if l.Auth {
		fmt.Fprintf(w, "authentication is on: connect with db_kwargs={\"username\": ..., \"password\": ...} (docs/configuration.md)\n")
	}
	fmt.Fprintf(w, "try (pip install adbc-driver-flightsql pyarrow):\n  python3 -c \"import adbc_driver_flightsql.dbapi as f; "+
		"cur = f.connect('%s', autocommit=True).cursor(); cur.execute('SELECT 42 AS answer'); print(cur.fetchall())\"\n\n", uri)
}
