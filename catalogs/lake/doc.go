// Package lake is the floor the table formats stand on: what a backend
// that keeps a table as files in an object store (Paimon, Iceberg, Delta
// Lake) needs beyond its own metadata mapping.
//
//   - Store: the object store, local files or an S3 bucket, with the one
//     primitive a compare-and-swap commit needs, put-if-absent (Create:
//     link(2) of a temporary file locally, a PUT with If-None-Match: * on
//     S3, where 412 is an existing object and 409 ConditionalRequestConflict
//     a race tried again), streamed writes (multipart on S3), ranged reads
//     and a listing with sizes and modification times for the reclaimer.
//     Every S3 call goes through a catalogs.Remote (timeout, retries of
//     idempotent calls, the storage breaker), and only the storage's own
//     failures count.
//   - Run: the compare-and-swap commit loop (a total timeout, reload,
//     "did it land?", the file check, attempt, backoff with jitter) with
//     one set of defaults, DefaultRetry. The file check refuses a commit
//     one of whose data files a snapshot landed meanwhile adds (another
//     replica committing the same payload under another id): a data file
//     lands once per table, across processes.
//   - Groups: the group-commit queue (one per table): a round at a time
//     takes the pending appends within the backend's budget (an overwrite
//     alone, after the appends before it) and a caller that leaves while
//     queued is dropped, never committed. A backend supplies the round
//     (Iceberg: one snapshot; Delta: one log version).
//   - Reclaimer: the orphan reclaimer's skeleton. A backend lists its
//     layout's candidates and reads its references (Table); the floor
//     owns the age, the second read of the references before deleting,
//     the deletion and the report.
//   - Marks: the create marks of staged creates (a stream's lease, kept
//     fresh by Keeper and catalogs.CreateKeeper), and ReclaimCreates, the
//     reclaim of a killed create's directory that no table took (a
//     backend says what a table is there and which files are its, in
//     CreateDir).
//   - ParquetFile: the rolling data file writer of both backends' lanes
//     (buffered pqarrow, row groups closed by encoded size, high-cardinality
//     columns without a dictionary), with an Observer that accumulates the
//     column statistics a format records (Paimon's value stats, Iceberg's
//     NaN counts).
//   - ParseCommon, ParseInts, ParseBool: one property dialect for the
//     commit loop (commit.retry.*) and remote calls (remote.*).
//
// A backend supplies what is its format's: how a snapshot is written and
// found, which files it references. It never reimplements the floor.
package lake
