// Package server assembles the gateway: it loads and validates the
// configuration, opens the configured catalogs through the backend
// registry, and serves Flight SQL over gRPC with authentication, panic
// recovery, a health service and graceful shutdown.
package server
