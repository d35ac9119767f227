package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// OpenStream opens a write session on table t (catalogs.StreamWriter). The
// session feeds every batch to one iceberg-go writer that follows the
// partition spec and rolls data files at write.target-file-size-bytes, so
// an upload of many small batches becomes a few large files. At most two
// batches wait in the session besides those being encoded, which bounds
// memory whatever the upload's size.
func (p *Provider) OpenStream(ctx context.Context, t catalogs.TableIdent, _ catalogs.WriteTxn) (catalogs.WriteStream, error) {
	if p.storage.State() == catalogs.BreakerOpen {
		return nil, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: object storage unavailable (circuit open)", t)
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	return p.openStream(ctx, t, tbl, nil)
}

// openStream starts the writer of a stream on tbl, whose current schema
// and partition spec the files follow; rep is set for a replace with a
// new schema (replace.go).
func (p *Provider) openStream(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, rep *replacement) (catalogs.WriteStream, error) {
	target, err := arrowSchema(tbl.Schema(), true)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s: schema", t))
	}
	s := &stream{ident: t, target: target, props: tbl.Properties(), replace: rep, in: make(chan arrow.RecordBatch, 1)}
	// The writer outlives the OpenStream call: it stops on Close or Abort,
	// not when ctx ends.
	s.w, err = p.newFileWriter(context.WithoutCancel(ctx), t, tbl, target)
	if err != nil {
		return nil, err
	}
	s.w.run(func(yield func(arrow.RecordBatch, error) bool) {
		for b := range s.in {
			if !yield(b, nil) {
				// The writer failed (WriteRecords released b): Write sees
				// it through w.done.
				return
			}
		}
	})
	return s, nil
}

// stream is a catalogs.WriteStream.
type stream struct {
	ident  catalogs.TableIdent
	target *arrow.Schema
	props  ice.Properties // the table's, for conform
	// replace is set when the stream writes under a new schema.
	replace *replacement
	// create is set when the stream writes a staged create's files: the
	// digest of the table it makes (stagedcreate.go).
	create string
	// keep refreshes a staged create's mark (lake.Marks); nil otherwise.
	keep   *lake.Keeper
	w      *fileWriter
	in     chan arrow.RecordBatch
	closed bool
	// finished is set once the stream's files belong to receipts or are
	// deleted.
	finished bool
	rows     int64
}

// Write validates batch and hands it to the writer.
func (s *stream) Write(ctx context.Context, batch arrow.RecordBatch) error {
	if s.closed {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: write on a closed stream", s.ident)
	}
	if s.keep != nil {
		if err := s.keep.Keep(ctx); err != nil {
			return err
		}
	}
	rec, err := conform(ctx, s.ident.String(), s.target, s.props, batch)
	if err != nil {
		return err
	}
	if rec.NumRows() == 0 {
		rec.Release()
		return nil
	}
	select {
	case s.in <- rec:
		s.rows += rec.NumRows()
		return nil
	case <-s.w.done:
		rec.Release()
		s.closed = true
		close(s.in)
		_, err := s.w.wait()
		if err == nil {
			err = catalogs.Errorf(catalogs.ErrUnavailable, "table %s: writer stopped", s.ident)
		}
		return err
	case <-ctx.Done():
		rec.Release()
		_ = s.Abort(context.WithoutCancel(ctx))
		return catalogs.Wrap(catalogs.ErrUnavailable, context.Cause(ctx), fmt.Sprintf("table %s: write", s.ident))
	}
}

// Close flushes the open files and returns one receipt per data file.
func (s *stream) Close(ctx context.Context) ([]catalogs.WriteReceipt, error) {
	if s.closed {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: stream already closed", s.ident)
	}
	s.closed = true
	close(s.in)
	select {
	case <-s.w.done:
	case <-ctx.Done():
		s.finished = true
		s.w.cancel()
		if files, err := s.w.wait(); err == nil {
			s.w.cleanup(context.WithoutCancel(ctx), files)
		}
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, context.Cause(ctx), fmt.Sprintf("table %s: close stream", s.ident))
	}
	s.finished = true
	files, err := s.w.wait()
	s.w.p.storage.Record(err)
	if err != nil {
		return nil, err
	}
	out := make([]catalogs.WriteReceipt, 0, len(files))
	if len(files) == 0 {
		s.dropMark(ctx)
	}
	if len(files) == 0 && s.replace != nil {
		// An empty replace still carries its schema to the commit.
		r, err := s.w.p.receiptFor(s.ident, s.w.tbl, nil, s.replace, s.create, s.markID())
		if err != nil {
			return nil, err
		}
		return append(out, r), nil
	}
	for _, f := range files {
		r, err := s.w.p.receiptFor(s.ident, s.w.tbl, []ice.DataFile{f}, s.replace, s.create, s.markID())
		if err != nil {
			s.w.cleanup(context.WithoutCancel(ctx), files)
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Abort stops the writer and deletes everything it staged. After a Close
// that returned receipts it does nothing: the receipts own the files.
func (s *stream) Abort(context.Context) error {
	if s.finished {
		return nil
	}
	s.finished = true
	if !s.closed {
		s.closed = true
		close(s.in)
	}
	s.w.cancel()
	if files, err := s.w.wait(); err == nil {
		s.w.cleanup(context.WithoutCancel(s.w.ctx), files)
	}
	s.dropMark(s.w.ctx)
	return nil
}

// markID is a staged create's mark, "" for a stream into a table.
func (s *stream) markID() string {
	if s.keep == nil {
		return ""
	}
	return s.keep.ID
}

// dropMark removes the mark of a create stream that leaves no files.
func (s *stream) dropMark(ctx context.Context) {
	if s.keep != nil {
		s.keep.Marks.Remove(context.WithoutCancel(ctx), s.ident, s.keep.ID)
	}
}
