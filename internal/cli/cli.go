// Package cli is the flightgw command line that both binaries share: the
// light front cmd/flightgw, which runs it with a gateway function that
// replaces the process with flightgw-server, and cmd/flightgw-server,
// which runs it with the gateway itself. It imports nothing of the
// gateway (no backend, engine or gRPC), so the front starts without their
// package initialisers (iceberg-go's substrait function catalogue alone
// costs about 55 ms and 33 MB), which every package a Go binary links
// runs before main.
package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/auth/secret"
	"github.com/flightgw/flightgw/internal/messagescli"
	"github.com/flightgw/flightgw/internal/version"
)

// Usage is what `flightgw --help` prints.
const Usage = `flightgw: an Arrow Flight SQL gateway to data lake catalogs.

Usage:
  flightgw serve [flags]      start the gateway (see 'flightgw serve -h')
  flightgw version            print the version
  flightgw hash-password      read a password on stdin, print its bcrypt hash (auth.users[].password_hash)
  flightgw hash-token         read a token on stdin, print its SHA-256 (auth.tokens[].sha256)
  flightgw messages ...       inspect or encode Paimon commit messages (see 'flightgw messages -h')

With no configuration, 'flightgw serve' runs the embedded default: catalog "lake",
an Iceberg SQL catalog in <data-dir>/catalog.db (SQLite) with its warehouse in
<data-dir>/warehouse, on 127.0.0.1:32010 without authentication.

'flightgw serve' runs the gateway binary, flightgw-server, in the same process
(found next to flightgw, else $FLIGHTGW_SERVER, else on PATH).
`

// Gateway runs a command that needs the gateway; args start with the
// command's name ("serve"). It returns the exit code.
type Gateway func(args []string) int

// Run runs the command line args (without the program name) and returns
// the process exit code: 0 on success, 1 on failure, 2 on misuse.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, gateway Gateway) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, Usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return gateway(args)
	case "version", "--version":
		fmt.Fprintf(stdout, "flightgw %s (arrow-go %s)\n", version.Version, arrow.PkgVersion)
		return 0
	case "hash-password":
		return runHash(stdin, stdout, stderr, secret.HashPassword)
	case "hash-token":
		return runHash(stdin, stdout, stderr, func(s string) (string, error) { return secret.HashToken(s), nil })
	case "messages":
		return messagescli.Run("flightgw messages", args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, Usage)
		return 0
	default:
		fmt.Fprintf(stderr, "flightgw: unknown command %q\n\n%s", args[0], Usage)
		return 2
	}
}

func runHash(stdin io.Reader, stdout, stderr io.Writer, hash func(string) (string, error)) int {
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "flightgw: %v\n", err)
		return 1
	}
	value := strings.TrimRight(line, "\r\n")
	if value == "" {
		fmt.Fprintln(stderr, "flightgw: nothing read on stdin")
		return 2
	}
	h, err := hash(value)
	if err != nil {
		fmt.Fprintf(stderr, "flightgw: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, h)
	return 0
}
