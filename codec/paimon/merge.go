package paimon

import "fmt"

// Merge combines the messages several workers prepared for one commit, in order, after
// checking that they agree: a bucket of a partition never claims two different totals,
// and no data file is added twice to a bucket of a partition nor index file twice to the
// table. Disagreement means a worker saw another table layout or a payload was delivered
// twice; committing either would corrupt the table, so Merge refuses.
func Merge(batches ...[]CommitMessage) ([]CommitMessage, error) {
	type bucketKey struct {
		partition string
		bucket    int32
	}
	type fileKey struct {
		bucketKey
		name string
	}
	totals := map[bucketKey]int32{}
	files := map[fileKey]bool{}
	indexes := map[string]bool{}
	var out []CommitMessage
	for bi, batch := range batches {
		for mi := range batch {
			m := &batch[mi]
			where := fmt.Sprintf("batch %d message %d", bi, mi)
			k := bucketKey{string(m.Partition.data), m.Bucket}
			if m.TotalBuckets != nil {
				if t, ok := totals[k]; ok && t != *m.TotalBuckets {
					return nil, fmt.Errorf("paimon: merge: %s: bucket %d of partition %x claims %d total buckets, an earlier message %d", where, m.Bucket, m.Partition.data, *m.TotalBuckets, t)
				}
				totals[k] = *m.TotalBuckets
			}
			for _, list := range [][]DataFile{m.Data.NewFiles, m.Data.ChangelogFiles, m.Compact.CompactAfter, m.Compact.ChangelogFiles} {
				for _, f := range list {
					fk := fileKey{k, f.FileName}
					if files[fk] {
						return nil, fmt.Errorf("paimon: merge: %s: data file %q added twice to bucket %d", where, f.FileName, m.Bucket)
					}
					files[fk] = true
				}
			}
			for _, list := range [][]IndexFile{m.Data.NewIndexFiles, m.Compact.NewIndexFiles} {
				for _, f := range list {
					if indexes[f.FileName] {
						return nil, fmt.Errorf("paimon: merge: %s: index file %q added twice", where, f.FileName)
					}
					indexes[f.FileName] = true
				}
			}
			out = append(out, *m)
		}
	}
	return out, nil
}
