// Package iceberg is the Apache Iceberg backend of flightgw, built on
// iceberg-go and registered as catalogs type "iceberg".
//
// Catalogs: the SQL catalog (SQLite through a pure-Go driver for the
// embedded default, Postgres by URI) and the REST catalog (bearer token or
// OAuth2 client credentials). Storage: local files and S3. The catalog is
// configured with plain string properties (the Prop* constants), reusing
// iceberg-go's names; OpenEmbedded opens the embedded default lake, which
// pyiceberg's SqlCatalog can read.
//
// Writes stage Parquet data files that follow the table's partition spec
// and become visible only at commit. Provider.WriteBatch writes each batch's
// own files; OpenStream (catalogs.StreamWriter) rolls files at
// write.target-file-size-bytes across many batches with bounded memory.
// Receipts carry the staged files encoded with iceberg-go's DataFile codec.
//
// Commits append (or, for CommitOverwrite, replace) in one snapshot, record
// a commit id in the snapshot summary (CommitIDKey) and retry conflicts
// with exponential backoff and jitter. Calls to the catalog service go
// through a circuit breaker, a timeout and, when idempotent, a bounded
// retry.
package iceberg
