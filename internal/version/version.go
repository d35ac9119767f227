// Package version holds the flightgw version. It is a package of its own,
// importing nothing, so that the light front (cmd/flightgw) and the
// gateway (cmd/flightgw-server, server) report the same version without
// the front linking the gateway. The Makefile sets it:
//
//	go build -ldflags '-X github.com/flightgw/flightgw/internal/version.Version=v1.2.3' ./cmd/...
package version

// Version is the flightgw version, "dev" unless set at build time with -ldflags.
var Version = "dev"
