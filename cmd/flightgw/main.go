// Command flightgw is an Arrow Flight SQL gateway to data lake catalogs.
//
//	flightgw serve [--listen ADDR] [--data-dir DIR] [--config FILE] [--insecure]
//	flightgw version
//	flightgw hash-password
//	flightgw hash-token
//	flightgw messages inspect|encode ...
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/auth"
	_ "github.com/flightgw/flightgw/catalogs/iceberg"   // registers the iceberg backend
	_ "github.com/flightgw/flightgw/catalogs/paimon"    // registers the paimon backend
	_ "github.com/flightgw/flightgw/catalogs/starrocks" // registers the starrocks backend
	"github.com/flightgw/flightgw/internal/messagescli"
	"github.com/flightgw/flightgw/server"
)

const usage = `flightgw: an Arrow Flight SQL gateway to data lake catalogs.

Usage:
  flightgw serve [flags]      start the gateway (see 'flightgw serve -h')
  flightgw version            print the version
  flightgw hash-password      read a password on stdin, print its bcrypt hash (auth.users[].password_hash)
  flightgw hash-token         read a token on stdin, print its SHA-256 (auth.tokens[].sha256)
  flightgw messages ...       inspect or encode Paimon commit messages (see 'flightgw messages -h')

With no configuration, 'flightgw serve' runs the embedded default: catalog "lake",
an Iceberg SQL catalog in <data-dir>/catalog.db (SQLite) with its warehouse in
<data-dir>/warehouse, on 127.0.0.1:32010 without authentication.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "flightgw %s (arrow-go %s)\n", server.Version, arrow.PkgVersion)
		return 0
	case "hash-password":
		return runHash(stdin, stdout, stderr, func(s string) (string, error) { return auth.HashPassword(s) })
	case "hash-token":
		return runHash(stdin, stdout, stderr, func(s string) (string, error) { return auth.HashToken(s), nil })
	case "messages":
		return messagescli.Run("flightgw messages", args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "flightgw: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func runServe(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "address to listen on (default "+server.DefaultListen+"; env FLIGHTGW_LISTEN)")
	dataDir := fs.String("data-dir", "", "directory of the embedded catalog (default "+server.DefaultDataDir+"; env FLIGHTGW_DATA_DIR)")
	configPath := fs.String("config", "", "YAML configuration file (see docs/configuration.md)")
	insecure := fs.Bool("insecure", false, "allow listening on a non-loopback address without authentication")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: flightgw serve [flags]\n\nFlags override the configuration file and the environment (%s).\n\n",
			strings.Join(server.EnvVars, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
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
	if err := server.Run(ctx, cfg, log); err != nil {
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

func runHash(stdin io.Reader, stdout, stderr io.Writer, hash func(string) (string, error)) int {
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "flightgw: %v\n", err)
		return 1
	}
	secret := strings.TrimRight(line, "\r\n")
	if secret == "" {
		fmt.Fprintln(stderr, "flightgw: nothing read on stdin")
		return 2
	}
	h, err := hash(secret)
	if err != nil {
		fmt.Fprintf(stderr, "flightgw: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, h)
	return 0
}
