package catalogtest

import (
	"testing"

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
