// Command flightgw is the flightgw command line, an Arrow Flight SQL
// gateway to data lake catalogs:
//
//	flightgw serve [--listen ADDR] [--data-dir DIR] [--config FILE] [--insecure]
//	flightgw version
//	flightgw hash-password
//	flightgw hash-token
//	flightgw messages inspect|encode ...
//
// It is a light front: it runs every command but serve itself, and for
// serve replaces itself (execve, same PID) with the gateway binary
// flightgw-server, passing the arguments and the environment unchanged.
// It links none of the gateway (backends, SQL engine, gRPC): every package
// a Go binary links runs its initialisers before main, and the gateway's
// (iceberg-go's substrait function catalogue above all) cost 60-130 ms and
// 60-90 MB before the first byte of `flightgw messages inspect`. Because
// the process stays the same, a signal sent to it (Ctrl-C, `make run`'s
// exec, systemd's or docker's stop) reaches the gateway.
package main

import (
	"os"

	"github.com/flightgw/flightgw/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, func([]string) int {
		return execServer(os.Args, os.Environ(), os.Stderr)
	}))
}
