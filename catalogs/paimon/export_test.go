package paimon

// SetS3PartSize sets the multipart part size and returns the undo, so
// that a test reaches a multipart upload with a few MiB.
func SetS3PartSize(n int) func() {
	old := s3PartSize
	s3PartSize = n
	return func() { s3PartSize = old }
}
