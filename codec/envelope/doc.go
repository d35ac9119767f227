// Package envelope is the signed transport envelope of commit messages:
// the bytes a worker gateway hands out at PrepareCommit and a coordinator
// gateway (another process, perhaps another replica) commits or aborts.
//
// Version 2 carries, besides the payload and its serializer version (all
// that the unsigned version 1 carried), the backend kind, the
// table the payload was staged for, the commit user, the time it was
// prepared, a CRC32C that tells a damaged envelope, and an HMAC-SHA256 over
// every byte before it, keyed by the replicas' shared key: a coordinator
// accepts only payloads a replica sharing its key signed, for the table
// the request names. Version 1 envelopes are refused: they are unsigned.
//
// The envelope names no backend: the kinds and serializer versions a
// gateway takes are its backends' catalogs.PayloadCodec's.
//
// The layout is in docs/commit-messages.md and in Seal's comment.
package envelope
