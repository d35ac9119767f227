// Package paimon is the Apache Paimon table backend, registered as catalog
// type "paimon": Paimon's filesystem catalog on a local warehouse or an
// S3 bucket (warehouse/<db>.db/<table>/ with schema/, snapshot/, manifest/,
// partition and bucket-N/ directories), written as Paimon 1.4 writes it
// so that Paimon Java and pypaimon read the tables, and reading what they
// write. With metastore jdbc the databases and tables are instead rows of
// Paimon's JdbcCatalog tables in SQLite or PostgreSQL (jdbc.go), shared
// with Paimon Java, and commits take its distributed lock when
// lock.enabled (jdbc_lock.go); table metadata stays in the warehouse.
//
// Writes stage Parquet data files named data-<uuid>-<n>.parquet with
// Paimon's DataFileMeta statistics; a receipt carries Paimon
// CommitMessages in CommitMessageSerializer bytes (codec/paimon), so a
// Java committer can take them as they are. A commit writes a manifest
// (Avro, Paimon's schema), the base and delta manifest lists and
// snapshot/snapshot-N with put-if-absent (a hard link on local files, a
// conditional PUT with If-None-Match: * on S3, 412 meaning taken):
// losing the race to another committer means reloading the new latest
// snapshot and trying again. The commit user of a snapshot is the
// gateway's commit id with Paimon's batch commit identifier, which is
// Paimon's own exactly-once key: a repeated commit finds its snapshot and
// appends nothing.
//
// On the filesystem catalog a create is staged (catalogs.StagedCreator,
// stagedcreate.go): the data files are written first, under the table's
// directory, and the table appears with the put-if-absent of
// schema/schema-0 that its first commit makes before snapshot-1.
//
// Orphan files (staged data files of a killed writer, the manifests and
// lists of a commit that never landed) are deleted by Reclaim
// (catalogs.Reclaimer, reclaim.go) once older than reclaim.min_age, never
// what a snapshot, tag or changelog reaches.
//
// On S3 every call goes through one circuit breaker with a timeout per
// attempt (catalogs.Remote); idempotent calls are retried, and a data
// file streams up as a multipart upload holding one part in memory.
//
// Tables: append tables with unaware (-1) or fixed buckets (bucket-key,
// hashed as Paimon's DefaultBucketFunction does), primary-key tables with
// fixed buckets (level-0 key-value files: _KEY_ fields, _SEQUENCE_NUMBER,
// _VALUE_KIND, sorted by key, one row per key, sequence numbers
// continuing the bucket's), and identity partitions on string, integer, date
// and boolean columns. Scans merge primary-key tables on read as Paimon
// Java's batch read does: deduplicate (the highest sequence number wins,
// or the sequence fields first), first-row, partial-update and
// aggregation (partial.go, aggregate.go), with deletion vectors applied
// (dv.go). A table whose options ask a writer or a reader for more than
// this backend implements (features.go; docs/paimon.md lists them) is
// refused FailedPrecondition naming the option, and a commit carries the
// previous snapshot's index manifest, watermark, next row id and
// statistics forward.
package paimon
