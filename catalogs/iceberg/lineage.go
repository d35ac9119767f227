package iceberg

import (
	"fmt"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// withRowLineage gives each data file of a commit attempt on a format
// version 3 table its first_row_id (Iceberg spec, "Row Lineage"): the
// table's next-row-id at this attempt, plus the rows of the files before
// it, so the files' row ids are the range [next-row-id, next-row-id +
// rows) that the snapshot claims. iceberg-go's AddDataFiles and
// ReplaceDataFilesWithDataFiles require the value explicitly on v3; its
// snapshot producer gives the snapshot first-row-id = the same
// next-row-id and added-rows = the rows of the new manifests, and numbers
// the new manifest from there, so these values are the ones inheritance
// would have given. They depend on the table the attempt commits onto,
// so they are computed per attempt and never kept in a receipt: an
// attempt that lost its compare-and-swap gets the next table's values.
// Tables of format versions 1 and 2 have no row lineage; files pass
// unchanged.
func withRowLineage(meta table.Metadata, files []ice.DataFile) ([]ice.DataFile, error) {
	if meta.Version() < 3 || len(files) == 0 {
		return files, nil
	}
	next := meta.NextRowID()
	out := make([]ice.DataFile, len(files))
	for i, df := range files {
		spec := meta.PartitionSpecByID(int(df.SpecID()))
		if spec == nil {
			return nil, fmt.Errorf("data file %s: partition spec %d is not the table's", df.FilePath(), df.SpecID())
		}
		f, err := withFirstRowID(df, *spec, next)
		if err != nil {
			return nil, fmt.Errorf("data file %s: first_row_id: %w", df.FilePath(), err)
		}
		out[i] = f
		next += max(0, df.Count())
	}
	return out, nil
}

// withFirstRowID returns a copy of data file df with first_row_id id.
// iceberg-go's DataFile is read-only; its builder is the one way to set
// the field, so every other field is copied across.
func withFirstRowID(df ice.DataFile, spec ice.PartitionSpec, id int64) (ice.DataFile, error) {
	b, err := ice.NewDataFileBuilder(spec, df.ContentType(), df.FilePath(), df.FileFormat(), df.Partition(), nil, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).SplitOffsets(df.SplitOffsets()).FirstRowID(id)
	if d := df.DistinctValueCounts(); len(d) > 0 {
		b.DistinctValueCounts(d)
	}
	if lo := df.LowerBoundValues(); len(lo) > 0 {
		b.LowerBoundValues(lo)
	}
	if hi := df.UpperBoundValues(); len(hi) > 0 {
		b.UpperBoundValues(hi)
	}
	if k := df.KeyMetadata(); len(k) > 0 {
		b.KeyMetadata(k)
	}
	if s := df.SortOrderID(); s != nil {
		b.SortOrderID(*s)
	}
	return b.Build(), nil
}
