// Package flightsql is the catalog backend of type "flightsql": one
// upstream Flight SQL server (another flightgw, Dremio, Doris, Sail, ...)
// federated behind the gateway. Its namespaces are the upstream's schemas
// (of one upstream catalog), its tables the upstream's tables.
//
// What the upstream can do is read from its own GetSqlInfo, never
// assumed: a capability it lacks is refused with an error naming the
// upstream and the capability. Queries whose tables all live upstream are
// pushed whole (catalogs.QueryPusher); others scan the upstream tables
// with the projection and portable filters pushed. Writes of one gateway
// unit of work are one upstream transaction (BeginTransaction, bulk ingest
// or prepared INSERT carrying the transaction id, EndTransaction).
// docs/upstream.md describes the configuration and the mappings.
package flightsql
