package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// s3Writer streams a data file to S3: one PUT when the file stays under
// a part, else a multipart upload of S3Config.PartSize parts, so an open file
// holds one part in memory, never the whole file. The object appears at
// Close (CompleteMultipartUpload), as on local files; a failed Close
// aborts the upload, so no part is left behind.
type s3Writer struct {
	s        *S3
	ctx      context.Context
	key      string
	buf      []byte
	uploadID *string
	parts    []types.CompletedPart
	err      error
	closed   bool
}

func (s *S3) Writer(ctx context.Context, p string) (io.WriteCloser, error) {
	return &s3Writer{s: s, ctx: ctx, key: s.key(p), buf: make([]byte, 0, 1<<20)}, nil
}

func (w *s3Writer) Write(b []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, errors.New("write to a closed s3 object")
	}
	n := len(b)
	for len(b) > 0 {
		room := w.s.partSize - len(w.buf)
		take := min(room, len(b))
		w.buf = append(w.buf, b[:take]...)
		b = b[take:]
		if len(w.buf) == w.s.partSize {
			if err := w.flushPart(); err != nil {
				w.err = err
				w.abort()
				return 0, err
			}
		}
	}
	return n, nil
}

// flushPart uploads the buffer as the next part, starting the multipart
// upload at the first. Uploading part N again is harmless, so parts are
// retried; so is starting the upload (an upload started twice leaves an
// empty one that the bucket's lifecycle rule removes).
func (w *s3Writer) flushPart() error {
	s := w.s
	if w.uploadID == nil {
		out, err := guardS3(w.ctx, s.remote, true, func(ctx context.Context) (*s3.CreateMultipartUploadOutput, error) {
			o, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.cfg.bucket, Key: &w.key})
			return o, s.classify("create multipart upload", w.key, err)
		})
		if err != nil {
			return err
		}
		w.uploadID = out.UploadId
	}
	num := int32(len(w.parts) + 1)
	body := w.buf
	out, err := guardS3(w.ctx, s.remote, true, func(ctx context.Context) (*s3.UploadPartOutput, error) {
		o, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &s.cfg.bucket, Key: &w.key, UploadId: w.uploadID,
			PartNumber: aws.Int32(num), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
		return o, s.classify("upload part "+strconv.Itoa(int(num)), w.key, err)
	})
	if err != nil {
		return err
	}
	w.parts = append(w.parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	w.buf = w.buf[:0]
	return nil
}

// Close makes the object appear.
func (w *s3Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	s := w.s
	if w.uploadID == nil {
		body := w.buf
		_, w.err = guardS3(w.ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
			_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.bucket, Key: &w.key,
				Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
			return struct{}{}, s.classify("put", w.key, err)
		})
		w.buf = nil
		return w.err
	}
	if len(w.buf) > 0 {
		if w.err = w.flushPart(); w.err != nil {
			w.abort()
			return w.err
		}
	}
	// Not retried: completing twice answers NoSuchUpload to the second.
	_, w.err = guardS3(w.ctx, s.remote, false, func(ctx context.Context) (struct{}, error) {
		_, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &s.cfg.bucket, Key: &w.key,
			UploadId: w.uploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: w.parts}})
		return struct{}{}, s.classify("complete multipart upload", w.key, err)
	})
	if w.err != nil {
		w.abort()
	}
	w.buf = nil
	return w.err
}

// abort drops a started multipart upload and its parts, even when the
// stream's context has ended.
func (w *s3Writer) abort() {
	w.buf = nil
	if w.uploadID == nil {
		return
	}
	s := w.s
	ctx := context.WithoutCancel(w.ctx)
	_, _ = guardS3(ctx, s.remote, true, func(ctx context.Context) (struct{}, error) {
		_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.cfg.bucket, Key: &w.key, UploadId: w.uploadID})
		return struct{}{}, s.classify("abort multipart upload", w.key, err)
	})
	w.uploadID = nil
}

// s3Object is an object opened for the Parquet reader: every ReadAt is a
// ranged GET (the reader asks for the footer, then whole column chunks).
type s3Object struct {
	s    *S3
	ctx  context.Context
	key  string
	size int64
	off  int64
}

func (s *S3) Open(ctx context.Context, p string) (Object, error) {
	k := s.key(p)
	out, err := guardS3(ctx, s.remote, true, func(ctx context.Context) (*s3.HeadObjectOutput, error) {
		o, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.cfg.bucket, Key: &k})
		return o, s.classify("head", k, err)
	})
	if err != nil {
		return nil, err
	}
	return &s3Object{s: s, ctx: ctx, key: k, size: aws.ToInt64(out.ContentLength)}, nil
}

func (o *s3Object) Size() int64 { return o.size }

func (o *s3Object) Close() error { return nil }

func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("s3 object %s: negative offset", o.key)
	}
	if off >= o.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), o.size-off)
	if want == 0 {
		return 0, nil
	}
	s := o.s
	rng := fmt.Sprintf("bytes=%d-%d", off, off+want-1)
	n, err := guardS3(o.ctx, s.remote, true, func(ctx context.Context) (int, error) {
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.bucket, Key: &o.key, Range: &rng})
		if err != nil {
			return 0, s.classify("get", o.key, err)
		}
		defer out.Body.Close()
		n, err := io.ReadFull(out.Body, p[:want])
		return n, s.classify("get", o.key, err)
	})
	if err != nil {
		return n, err
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (o *s3Object) Read(p []byte) (int, error) {
	n, err := o.ReadAt(p, o.off)
	o.off += int64(n)
	return n, err
}

func (o *s3Object) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.off
	case io.SeekEnd:
		offset += o.size
	default:
		return 0, fmt.Errorf("s3 object %s: bad whence %d", o.key, whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("s3 object %s: negative position", o.key)
	}
	o.off = offset
	return offset, nil
}
