// Package catalogs defines the contract every flightgw backend implements.
//
// The contract is a Go translation of shared/reference/catalog_common.rs:
// a Provider answers four calls (GetTableSpec, WriteBatch, Commit,
// GetSecurityContext), and every type of the reference keeps every field.
//
// What a gateway needs beyond the reference lives in small optional
// interfaces that callers discover by type assertion, in the manner of
// database/sql/driver, listed once with their callers, fallbacks and
// catalogtest checks in Contract (contract.go). A backend implements only
// what it really supports; nothing has a method that merely answers "not
// supported". The table formats' shared floor (object store, commit loop,
// reclaimer, Parquet writer) is catalogs/lake.
//
// Backends register themselves by type name (Register) and are built from
// plain string properties (Open), as iceberg-go's catalog registry does.
// Errors returned by backends wrap one of the kinds in errors.go so that
// callers can test them with errors.Is and map them to gRPC codes.
package catalogs
