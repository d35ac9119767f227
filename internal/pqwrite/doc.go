// Package pqwrite holds what the backends' Parquet writers share for
// speed: the C zstd codec (registered in place of arrow-go's for the
// whole process), the zstd level they default to, the choice of the
// columns written without a dictionary or delta-encoded, a page-buffer
// allocator, and FlatWriter, which writes the files of flat columns
// without pqarrow (storing the zstd pages it cannot shrink in raw blocks:
// rawzstd.go).
package pqwrite

// DefaultZstdLevel is the zstd level when a table sets none: level 1,
// Arrow C++'s and so pyarrow's, pyiceberg's and pypaimon's default (and
// Paimon Java's file.compression.zstd-level), about a third cheaper than
// arrow-go's default (3) for a few percent more bytes.
const DefaultZstdLevel = 1
