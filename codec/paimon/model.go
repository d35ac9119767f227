package paimon

// CommitMessage is Paimon's CommitMessageImpl: the files one writer staged for one
// bucket of one partition.
type CommitMessage struct {
	// Partition is the partition's BinaryRow; EmptyRow for an unpartitioned table.
	Partition Row
	// Bucket is the bucket number; Paimon uses negative numbers for special buckets
	// (BucketMode.POSTPONE_BUCKET is -2, the dynamic-bucket sentinel is -1).
	Bucket int32
	// TotalBuckets is the table's bucket count when the writer knew it, else nil.
	TotalBuckets *int32
	Data         DataIncrement
	Compact      CompactIncrement
}

// DataIncrement is what a write added: DataIncrement in Java.
type DataIncrement struct {
	NewFiles          []DataFile
	DeletedFiles      []DataFile
	ChangelogFiles    []DataFile
	NewIndexFiles     []IndexFile
	DeletedIndexFiles []IndexFile
}

// CompactIncrement is what a compaction rewrote: CompactIncrement in Java.
type CompactIncrement struct {
	CompactBefore     []DataFile
	CompactAfter      []DataFile
	ChangelogFiles    []DataFile
	NewIndexFiles     []IndexFile
	DeletedIndexFiles []IndexFile
}

// FileSource says whether a data file came from a write or a compaction.
type FileSource int8

// File sources, as FileSource.toByteValue writes them.
const (
	FileSourceAppend  FileSource = 0
	FileSourceCompact FileSource = 1
)

// DataFile is Paimon's DataFileMeta, every field of serializer versions 10 to 12.
// A nil pointer or nil slice is a null (Java's @Nullable); a non-nil empty slice is an
// empty list, which Paimon keeps distinct.
type DataFile struct {
	FileName          string
	FileSize          int64
	RowCount          int64
	MinKey            Row
	MaxKey            Row
	KeyStats          Stats
	ValueStats        Stats
	MinSequenceNumber int64
	MaxSequenceNumber int64
	SchemaID          int64
	Level             int32
	// ExtraFiles is never null in Java; a nil slice encodes as an empty list.
	ExtraFiles []string
	// CreationTime is epoch milliseconds (TIMESTAMP(3): sub-millisecond time is not kept).
	CreationTime   *int64
	DeleteRowCount *int64
	EmbeddedIndex  []byte
	FileSource     *FileSource
	ValueStatsCols []string
	ExternalPath   *string
	FirstRowID     *int64
	WriteCols      []string
}

// Stats is Paimon's SimpleStats: min and max values as BinaryRows of the stats columns
// and a null count per column (nil for unknown).
type Stats struct {
	MinValues  Row
	MaxValues  Row
	NullCounts []*int64
}

// EmptyStats is SimpleStats.EMPTY_STATS.
var EmptyStats = Stats{MinValues: EmptyRow, MaxValues: EmptyRow, NullCounts: []*int64{}}

// IndexFile is Paimon's IndexFileMeta: a hash index, a deletion-vector index, or (from
// version 11) a global index.
type IndexFile struct {
	// IndexType is "HASH", "DELETION_VECTORS", or a global index's type.
	IndexType string
	FileName  string
	FileSize  int64
	RowCount  int64
	// DVRanges are the deletion vectors a DELETION_VECTORS file holds, in file order.
	// Java keys them by data file name, so a name may appear only once.
	DVRanges     []DeletionVector
	ExternalPath *string
	// GlobalIndex needs version 11 or later.
	GlobalIndex *GlobalIndex
}

// DeletionVector is Paimon's DeletionVectorMeta: where one data file's deletion vector
// sits in an index file.
type DeletionVector struct {
	DataFileName string
	Offset       int32
	Length       int32
	Cardinality  *int64
}

// GlobalIndex is Paimon's GlobalIndexMeta.
type GlobalIndex struct {
	RowRangeStart int64
	RowRangeEnd   int64
	IndexFieldID  int32
	ExtraFieldIDs []int32
	IndexMeta     []byte
	// SourceMeta needs version 12.
	SourceMeta []byte
}
