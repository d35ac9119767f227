// Command flightgw-messages inspects and encodes Paimon commit-message
// payloads, as `flightgw messages` does (docs/commit-messages.md):
//
//	flightgw-messages inspect [--version N] [--partition-types T1,T2,...] FILE
//	flightgw-messages encode [--version N] [--envelope] < JSON > FILE
//
// It links the codec alone. `flightgw messages` pays, before main runs,
// the start-up of every package the gateway links (the SQL engine,
// iceberg-go and its substrait function catalogue: about 0.1–0.2 s and
// 90 MB); this command starts in about a millisecond and 3 MB, for
// scripts that inspect many payloads.
package main

import (
	"os"

	"github.com/flightgw/flightgw/internal/messagescli"
)

func main() {
	os.Exit(messagescli.Run("flightgw-messages", os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
