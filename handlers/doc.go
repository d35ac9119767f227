// Package handlers answers Flight SQL calls. Each handler is a thin adapter
// named after the protocol message it answers: it decodes the request,
// calls the domain packages (txn, auth, catalogs) and maps their errors to
// gRPC status codes (Status). No storage logic lives here, and no handler
// names a backend's concrete types: backend capabilities are found through
// the optional interfaces of package catalogs.
package handlers
