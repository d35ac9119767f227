package catalogtest

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// FlatWritten reports whether the Parquet file at path was written by
// pqwrite.FlatWriter: the first page of its first column has no
// statistics of its own, which pqarrow always writes and FlatWriter never
// does. Reader tests check with it that the files they have independent
// readers read are FlatWriter's.
func FlatWritten(t testing.TB, path string) bool {
	t.Helper()
	rd, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer rd.Close()
	pr, err := rd.RowGroup(0).GetColumnPageReader(0)
	if err != nil || !pr.Next() {
		t.Fatalf("%s: first page: %v", path, err)
	}
	p, ok := pr.Page().(interface {
		Statistics() metadata.EncodedStatistics
	})
	return ok && !p.Statistics().HasMin && !p.Statistics().HasMax && !p.Statistics().HasNullCount
}

// ColumnChunk is what the footer of a Parquet file says of one column's
// chunks, summed over its row groups: their encodings, and their sizes
// compressed and not.
type ColumnChunk struct {
	Encodings                []parquet.Encoding
	Compressed, Uncompressed int64
}

// Chunk reads the footer of the Parquet file at path and returns the
// chunks of its top-level column name.
func Chunk(t testing.TB, path, name string) ColumnChunk {
	t.Helper()
	rd, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer rd.Close()
	col := rd.MetaData().Schema.ColumnIndexByName(name)
	if col < 0 {
		t.Fatalf("%s: no column %s", path, name)
	}
	var out ColumnChunk
	for g := range rd.NumRowGroups() {
		cc, err := rd.MetaData().RowGroup(g).ColumnChunk(col)
		if err != nil {
			t.Fatalf("%s: row group %d, column %s: %v", path, g, name, err)
		}
		for _, e := range cc.Encodings() {
			if !slices.Contains(out.Encodings, e) {
				out.Encodings = append(out.Encodings, e)
			}
		}
		out.Compressed += cc.TotalCompressedSize()
		out.Uncompressed += cc.TotalUncompressedSize()
	}
	return out
}
