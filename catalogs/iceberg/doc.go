// Package iceberg is the Apache Iceberg backend of flightgw, built on
// iceberg-go and registered as catalogs type "iceberg".
//
// # Catalogs and storage
//
// The SQL catalog (SQLite through a pure-Go driver for the embedded
// default, Postgres by URI) and the REST catalog (bearer token or OAuth2
// client credentials). Storage: local files and S3. The catalog is built
// from plain string properties (the Prop* constants), which reuse
// iceberg-go's names and are validated at Open: a bad key is an
// ErrInvalidArgument naming it.
//
//	catalog-type                   sql (default) or rest
//	uri                            sqlite:////abs/catalog.db, postgres://u:p@host/db, or http(s)://rest
//	warehouse                      file:///abs/dir or s3://bucket/prefix (required for sql)
//	token, credential              REST bearer token, or OAuth2 client_id:client_secret
//	oauth2-server-uri, scope       REST OAuth2 token endpoint and scope
//	create-namespaces              namespaces created at Open, comma separated, levels dot separated
//	write.target-file-size-bytes   data file size a stream rolls at (default 128 MiB)
//	commit.retry.num-retries       conflict retries after the first attempt (default 50)
//	commit.retry.min-wait-ms       backoff floor (default 5)
//	commit.retry.max-wait-ms       backoff ceiling, with jitter (default 2000)
//	commit.retry.total-timeout-ms  give up retrying after (default 60000)
//	commit.group.enabled           merge concurrent commits of one table into one snapshot (default true)
//	commit.group.max-members       most commits one round merges (default 1000)
//	remote.timeout-ms              timeout of one call to the catalog or storage (default 30000)
//	remote.max-attempts            attempts of an idempotent remote call (default 3)
//	remote.breaker.failures        consecutive failures that open a breaker (default 5)
//	remote.breaker.open-ms         how long an open breaker rejects calls (default 30000)
//	s3.*, client.*, rest.*, gcs.*, adls.*, header.*, table-default.*, table-override.*, jdbc.*
//	                               passed to iceberg-go unchanged
//
// OpenEmbedded (or Open with EmbeddedProperties) opens the embedded default:
// catalog "lake" in <data-dir>/catalog.db with its warehouse in
// <data-dir>/warehouse and the namespace "default". It is the layout
// pyiceberg's SqlCatalog uses (table iceberg_tables keyed by catalog_name),
// so SqlCatalog("lake", uri="sqlite:////<data-dir>/catalog.db",
// warehouse="file:///<data-dir>/warehouse") reads and appends to it.
//
// # Writes
//
// Writes stage Parquet data files that follow the table's partition spec
// and become visible only at commit. Provider.WriteBatch writes each
// batch's own files (one per partition it touches) and returns their
// receipt: simple and safe, nothing is buffered between calls. For uploads
// of many batches, OpenStream (catalogs.StreamWriter) feeds every batch to
// one writer that rolls files at write.target-file-size-bytes; it holds at
// most a couple of batches plus one Parquet row group per open file (a
// quarter of the target size, at most 32 MiB), so memory stays bounded
// whatever the upload's size. Batches are checked against the table schema
// (a missing, extra or mistyped column, or a null in a required one, is an
// ErrInvalidArgument naming the column) and converted where no value
// changes: narrower integers, large strings, timestamp units (sub-
// microsecond digits are dropped). A receipt's Metadata is JSON listing
// the staged files, each encoded with iceberg-go's DataFile codec.
//
// # Commits
//
// Commits append (or, for CommitOverwrite, replace) in one snapshot and
// record a commit id in the snapshot summary (CommitIDKey). A lost
// compare-and-swap is retried after reloading the table, with exponential
// backoff and jitter, up to commit.retry.num-retries and
// commit.retry.total-timeout-ms; CommitOutcome.Retried counts the
// conflicts. Before every attempt the commit id is looked up, so a commit
// whose reply was lost is never applied twice, and the data files it adds
// are looked up in the current snapshot: one that another commit id
// already added (another replica committing the same receipts) is
// ErrFailedPrecondition naming the file and the snapshot (lake.Claimed),
// so a data file lands once per table across processes. The loop is the
// floor's (lake.Run); the single-table and the multi-table commit each
// supply only their Iceberg side of it.
//
// Commits to one table from one Provider are queued and merged (group
// commit, groupcommit.go): one round at a time commits every pending
// append as one snapshot recording each member's id and rows under
// CommitIDsKey, and answers each member; overwrites go alone, in queue
// order. A commit attempt that did not land deletes the manifests and the
// metadata file it wrote. Those snapshots also name their writer
// (WriterKey, random per Provider), so that snapshot expiry can tell the
// snapshots whose commit this Provider has answered, which no lookup needs
// any more, from those another process may still look up (unsettled.go,
// maintain.go). Maintenance commits (a rewrite, an expiry) are not queued
// with the writers' rounds: each is one compare-and-swap of its own that
// gives up to a writer's commit rather than retrying against it.
//
// # Replace
//
// OpenReplaceStream (catalogs.SchemaReplacer) keeps the table's UUID,
// snapshot history and older metadata. An upload whose columns, converted
// as CreateTable converts them, are the current schema is an ordinary
// stream, committed by CommitOverwrite as one overwrite snapshot.
// Otherwise the stream writes under a new schema (a column keeping its
// name and a compatible type keeps its field id, others get fresh ids
// above last-column-id) and its receipts (format v2) carry it;
// CommitOverwrite adds and sets that schema and replaces every data file
// in one catalog commit. A schema change landing meanwhile fails the
// commit with ErrConflict; a replace that drops or retypes a column the
// partition spec uses is refused with ErrInvalidArgument naming the
// partition field (the spec is kept, never reset).
//
// # Multi-table commits
//
// On a REST catalog whose server offers the transactions/commit endpoint,
// the registry's provider also implements catalogs.MultiTableCommitter:
// CommitTables sends every table's snapshot in one CommitTransaction,
// which the catalog applies to all tables or none. The SQL catalog has no
// such commit and its provider does not offer it.
//
// # Security context
//
// Encryption is what the writer applies (encryption.go): a table with
// encryption.kms-key-id on S3 is written with SSE-KMS and that key on
// every object write (data files, manifests, manifest lists, a SQL
// catalog's metadata files) and reports StorageLevel with the key; a
// table asking for client-side encryption (encryption.key-id,
// encryption.key-metadata.*, encryption keys in its metadata) is refused
// with FailedPrecondition, never written in plaintext. Credentials are the
// storage credentials a REST catalog vends for the table (asked for on
// every call, never cached), else those of the configuration.
//
// # Resilience
//
// Calls to the catalog service go through a circuit breaker, a timeout per
// attempt and, when idempotent, a bounded retry with backoff; data file
// writes and deletes go through a second breaker for object storage.
// Panics inside iceberg-go or arrow are turned into errors.
package iceberg
