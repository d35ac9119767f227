// Package paimon is a codec for Apache Paimon's commit messages, byte-compatible with the
// Java CommitMessageSerializer, so that flightgw, Java engines (Flink, Spark) and native
// engines can hand each other the files a distributed write staged.
//
// The payload is what Java's CommitMessageSerializer.serializeList writes: a big-endian
// message count followed by each message. A message carries its partition as a Paimon
// BinaryRow and its files as rows of Paimon's internal schemas (DataFileMeta,
// IndexFileMeta), each itself a BinaryRow. The serializer version is not in the payload:
// the caller names it (Java writes it beside the payload), which is why this package
// also defines a small transport envelope that carries it.
//
// BinaryRow, BinaryArray and BinaryMap are decoded without copying and read with typed
// accessors given a Paimon type ([ParseType]). Every offset and length taken from the
// input is checked against the bytes that are actually there: decoding untrusted bytes
// returns an error wrapping [ErrMalformed] or [ErrUnsupportedVersion], never panics, and
// never allocates more than the input could describe.
//
// The Java sources this follows are CommitMessageSerializer, DataFileMetaSerializer,
// IndexFileMetaSerializer (and its V3/V4 legacy deserializers), SerializationUtils,
// ObjectSerializer and, in paimon-common, BinaryRow, BinaryRowWriter,
// AbstractBinaryWriter, BinaryArray, BinaryArrayWriter, BinaryMap and MemorySegmentUtils.
// docs/commit-messages.md describes the formats byte by byte.
package paimon
