package lake

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Walk lists the regular files under dir; symbolic links and other
// special files are not listed (a reclaimer never follows one out of the
// table), nor is an entry that cannot be read (a partial listing deletes
// less, never more).
func (l Local) Walk(ctx context.Context, dir string, fn func(string, int64, time.Time) error) error {
	root := l.abs(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		return fn(filepath.ToSlash(rel), info.Size(), info.ModTime())
	})
	return err
}

// Walk lists the objects under dir's key prefix, a page at a time.
func (s *S3) Walk(ctx context.Context, dir string, fn func(string, int64, time.Time) error) error {
	prefix := s.dirKey(dir)
	var token *string
	for {
		in := &s3.ListObjectsV2Input{Bucket: &s.cfg.bucket, Prefix: aws.String(prefix), ContinuationToken: token}
		page, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
			o, err := s.client.ListObjectsV2(ctx, in)
			return o, s.classify("list", prefix, err)
		})
		if err != nil {
			return err
		}
		for _, c := range page.Contents {
			rel, ok := strings.CutPrefix(aws.ToString(c.Key), prefix)
			if !ok || rel == "" || strings.HasSuffix(rel, "/") {
				continue
			}
			if err := fn(rel, aws.ToInt64(c.Size), aws.ToTime(c.LastModified)); err != nil {
				return err
			}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return nil
		}
		token = page.NextContinuationToken
	}
}
