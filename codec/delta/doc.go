// Package delta is a codec for the Delta Lake transaction log, written from the Delta
// protocol (PROTOCOL.md of delta-io/delta): the actions of a commit file, the schema
// serialization format and its mapping to Arrow, partition value serialization, log replay
// to a snapshot (commits, classic and multi-part V1 checkpoints, V2 checkpoints with
// sidecars, _last_checkpoint), deletion vectors (RoaringBitmapArray, inline and on disk)
// and the table-feature checks a reader or writer must make.
//
// It holds no storage and no commit loop: a snapshot is computed from a [Log], a small
// interface that lists and reads the files of _delta_log, which a local directory
// ([DirLog]) or the table-format floor's object store satisfies. The catalog backend
// (type: delta) is built on top of this package.
//
// Every decoder here reads bytes another process wrote. Malformed input returns an error
// wrapping [ErrMalformed] that names the file, line and field at fault; nothing panics on
// input, and no allocation is sized by a number taken from the input before that number is
// checked against the bytes actually present. Unknown fields and unknown actions are ignored,
// as the protocol requires of readers ("Protocol Evolution"); missing required fields are
// errors.
package delta
