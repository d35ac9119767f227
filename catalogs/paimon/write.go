package paimon

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
	"github.com/flightgw/flightgw/internal/arrowconv"
	"github.com/flightgw/flightgw/internal/pqwrite"
)

// receiptFormat names the layout of WriteReceipt.Metadata.
const receiptFormat = "flightgw.paimon.commit-messages/v1"

// receiptVersion is the CommitMessageSerializer version of the receipts'
// messages: the one Paimon 1.4 reads and writes.
const receiptVersion = pcodec.Version11

// receiptMeta is the JSON in WriteReceipt.Metadata: Paimon
// CommitMessages exactly as CommitMessageSerializer.serializeList writes
// them (so that a Java committer can take them as they are), with the
// staged files' paths beside them for Discard.
type receiptMeta struct {
	Format   string `json:"format"`
	Table    string `json:"table"`
	Version  int    `json:"version"`
	Messages []byte `json:"messages"`
	// Files are the staged data files, relative to the table directory.
	Files []string `json:"files"`
	// SchemaID is the schema the files were written with.
	SchemaID int64 `json:"schema_id"`
	// Create is the layout digest (layoutDigest) of the table a staged
	// create makes, for files written before it exists; "" otherwise.
	Create string `json:"create,omitempty"`
	// Mark is the create mark (lake.Marks) of a staged create's stream.
	Mark string `json:"mark,omitempty"`
}

// WriteBatch writes batch as Parquet data files (one per partition and
// bucket it touches), without committing them.
func (p *Provider) WriteBatch(ctx context.Context, t catalogs.TableIdent, batch arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	ws, err := p.openStream(ctx, t)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	if err := ws.Write(ctx, batch); err != nil {
		_ = ws.Abort(context.WithoutCancel(ctx))
		return catalogs.WriteReceipt{}, err
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	if len(rs) == 0 {
		return p.receipt(ws.st, nil, nil)
	}
	return rs[0], nil
}

// OpenStream opens a write stream. What a stream holds is bounded
// whatever the size of the upload:
//   - an append table with unaware buckets (-1) and no partitions is
//     written by up to one lane per core (maxLanes), each encoding files
//     of its own (pqwrite.Lanes), each file rolled at
//     write.target-file-size-bytes;
//   - any other append table keeps one open file per partition and
//     bucket, rolled at the target size, at most write.max-open-files of
//     them;
//   - a primary-key table buffers rows per partition and bucket, at most
//     write.buffer-size-bytes of them (pk.go), and spills the largest
//     bucket's as a sorted level-0 file when a batch would pass that.
func (p *Provider) OpenStream(ctx context.Context, t catalogs.TableIdent, _ catalogs.WriteTxn) (catalogs.WriteStream, error) {
	return p.openStream(ctx, t)
}

func (p *Provider) openStream(ctx context.Context, t catalogs.TableIdent) (*stream, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := p.checkWritableState(ctx, st); err != nil {
		return nil, err
	}
	return p.newStream(st)
}

// newStream is a write stream on the table as st reads it, whose
// writability the caller checked.
func (p *Provider) newStream(st *tableState) (*stream, error) {
	t := st.ident
	s := &stream{p: p, st: st, target: st.schema.arrowSchema(), lay: st.schema.layout(), open: map[string]*fileWriter{},
		nextSeq: map[string]int64{}, pk: map[string]*pkBuffer{}, id: uuid.NewString(), mem: pqwrite.NewAlloc(),
		bufLimit: p.cfg.writeBuffer, maxOpen: p.cfg.maxOpenFiles}
	if v, ok := st.schema.Options[optWriteBufferSize]; ok {
		n, err := parseMemorySize(v)
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %s: %v", t, optWriteBufferSize, err)
		}
		s.bufLimit = max(min(s.bufLimit, n), 1)
	}
	for _, c := range st.schema.cols {
		s.types = append(s.types, c.typ)
	}
	return s, nil
}

// stream is one write session; not safe for concurrent use (its lanes
// share count, files and done under mu).
type stream struct {
	p      *Provider
	st     *tableState
	target *arrow.Schema
	types  []pcodec.Type
	lay    layout
	id     string // the uuid in this stream's file names
	open   map[string]*fileWriter
	pk     map[string]*pkBuffer
	// nextSeq is the next sequence number of each bucket of a
	// primary-key table, restored from the latest snapshot.
	nextSeq map[string]int64
	closed  bool
	// mem is the page buffers the stream's Parquet writers reuse (a
	// lane has its own).
	mem *pqwrite.Alloc
	// lanes write an unaware-bucket, unpartitioned append table; nil
	// until the first batch, and for other tables.
	lanes *pqwrite.Lanes

	mu    sync.Mutex
	count int // files named so far
	done  []pcodec.CommitMessage
	files []string

	// bufLimit bounds buffered, the Arrow bytes of a primary-key table's
	// rows held (pk.go); peak is the most buffered ever held, spills the
	// files written before Close.
	bufLimit, buffered, peak int64
	spills                   int
	// maxOpen bounds open, peakOpen is the most it held; tick orders
	// the open files by last write.
	maxOpen, peakOpen int
	tick              int64
}

// group is one partition and bucket of a batch.
type group struct {
	key       string
	partition pcodec.Row
	partPath  string
	bucket    int32
	rows      []int
}

// Write conforms batch to the table schema and appends its rows to the
// files of their partitions and buckets.
func (s *stream) Write(ctx context.Context, batch arrow.RecordBatch) error {
	if s.closed {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: write on a closed stream", s.st.ident)
	}
	if s.st.keep != nil {
		if err := s.st.keep.Keep(ctx); err != nil {
			return err
		}
	}
	rec, err := conform(ctx, s.st.ident.String(), s.target, batch)
	if err != nil {
		return err
	}
	defer rec.Release()
	if rec.NumRows() == 0 {
		return nil
	}
	if s.useLanes() {
		return s.sendLane(ctx, rec)
	}
	groups, err := s.groups(rec)
	if err != nil {
		return err
	}
	for _, g := range groups {
		part := rec
		if g.rows != nil {
			if part, err = arrowconv.Take(ctx, rec, g.rows); err != nil {
				return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: split batch", s.st.ident))
			}
		} else {
			part.Retain()
		}
		err := s.writeGroup(ctx, g, part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// groups splits a batch's rows by partition and bucket. A table without
// partitions and with unaware buckets has one group of every row (rows
// nil).
func (s *stream) groups(rec arrow.RecordBatch) ([]*group, error) {
	l := s.lay
	if len(l.partition) == 0 && l.buckets < 0 {
		return []*group{{key: "0", partition: pcodec.EmptyRow, bucket: 0}}, nil
	}
	byKey := map[string]*group{}
	var order []*group
	partTypes, keyTypes := s.typesOf(l.partition), s.typesOf(l.bucketKey)
	pv, kv := make([]any, len(l.partition)), make([]any, len(l.bucketKey))
	names := s.namesOf(l.partition)
	for i := range int(rec.NumRows()) {
		for j, c := range l.partition {
			pv[j] = value(rec.Column(c), i)
		}
		part, err := pcodec.BuildRow(partTypes, pv)
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: partition of row %d: %v", s.st.ident, i, err)
		}
		bucket := int32(0)
		if l.buckets > 0 {
			for j, c := range l.bucketKey {
				kv[j] = value(rec.Column(c), i)
			}
			key, err := pcodec.BuildRow(keyTypes, kv)
			if err != nil {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: bucket key of row %d: %v", s.st.ident, i, err)
			}
			bucket = bucketOf(key, l.buckets)
		}
		k := string(part.Bytes()) + "/" + strconv.Itoa(int(bucket))
		g, ok := byKey[k]
		if !ok {
			g = &group{key: k, partition: part, partPath: partitionPath(names, slices.Clone(pv)), bucket: bucket}
			byKey[k] = g
			order = append(order, g)
		}
		g.rows = append(g.rows, i)
	}
	return order, nil
}

func (s *stream) typesOf(cols []int) []pcodec.Type {
	out := make([]pcodec.Type, len(cols))
	for i, c := range cols {
		out[i] = s.st.schema.cols[c].typ
	}
	return out
}

func (s *stream) namesOf(cols []int) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = s.st.schema.cols[c].name
	}
	return out
}

// writeGroup appends rows of one partition and bucket: to its open file
// for an append table, to its buffer for a primary-key table (whose files
// must be sorted by key).
func (s *stream) writeGroup(ctx context.Context, g *group, rec arrow.RecordBatch) error {
	if len(s.lay.primary) > 0 {
		return s.bufferPK(ctx, g, rec)
	}
	w, ok := s.open[g.key]
	if !ok {
		if len(s.open) >= s.maxOpen {
			if err := s.closeOldest(); err != nil {
				return err
			}
		}
		var err error
		if w, err = s.newFile(ctx, g, rec, s.mem); err != nil {
			return err
		}
		s.open[g.key] = w
		s.peakOpen = max(s.peakOpen, len(s.open))
	}
	s.tick++
	w.used = s.tick
	if err := w.write(rec); err != nil {
		return err
	}
	if w.size() >= s.p.cfg.targetFileSize {
		delete(s.open, g.key)
		return s.finish(w)
	}
	return nil
}

// closeOldest finishes the open file written least recently, so that a
// stream touching more partitions and buckets than write.max-open-files
// holds that many files at most: a bucket written again later starts a
// new file (more, smaller files; never more memory).
func (s *stream) closeOldest() error {
	var oldest string
	for k, w := range s.open {
		if oldest == "" || w.used < s.open[oldest].used {
			oldest = k
		}
	}
	w := s.open[oldest]
	delete(s.open, oldest)
	return s.finish(w)
}

// fileWriter is one Parquet data file being written.
type fileWriter struct {
	s         *stream
	name      string
	rel       string // path relative to the table directory
	partition pcodec.Row
	bucket    int32
	pf        *lake.ParquetFile
	stats     statsObserver // the value stats, observed by pf
	// seq is the first sequence number of the file; a primary-key file
	// holds minSeq..maxSeq (a compaction's rows keep their keys' own).
	seq, minSeq, maxSeq int64
	// level is the LSM level of the file (0 but for a compaction's), and
	// source its FileSource.
	level  int32
	source pcodec.FileSource
	// keys holds a primary-key file's key stats, min and max key.
	keyStats       []colStats
	minKey, maxKey pcodec.Row
	used           int64 // the stream's tick at its last write
}

// statsObserver accumulates the value stats of a file's columns
// (lake.Observer).
type statsObserver []colStats

func (s statsObserver) Observe(rec arrow.RecordBatch) {
	for i := range s {
		s[i].add(rec.Column(i))
	}
}

// newFile opens data-<uuid>-<n>.parquet in the group's bucket directory,
// the name Paimon's DataFilePathFactory gives a data file, for batches
// like first (its schema, and the columns it samples as high-cardinality,
// which are written without a dictionary).
//
// The pages are zstd at the table's file.compression.zstd-level (Paimon's
// default, 1, when unset), compressed by C zstd (internal/pqwrite); row
// groups close at rowGroupBytes encoded, so that what a file buffers stays
// small.
func (s *stream) newFile(ctx context.Context, g *group, first arrow.RecordBatch, mem *pqwrite.Alloc) (*fileWriter, error) {
	s.mu.Lock()
	name := fmt.Sprintf("data-%s-%d.parquet", s.id, s.count)
	s.count++
	rel := g.partPath + "bucket-" + strconv.Itoa(int(g.bucket)) + "/" + name
	full, limit := lake.PathBound(s.p.fs, s.st.dir+"/"+rel)
	if err := catalogs.CheckFilePath(s.st.ident, rel, full, limit); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.files = append(s.files, rel) // before the create: cleanup deletes a partial file too
	s.mu.Unlock()
	out, err := s.p.fs.Writer(ctx, s.st.dir+"/"+rel)
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: create data file %s", s.st.ident, rel))
	}
	rg := min(max(s.p.cfg.targetFileSize/4, 1<<10), 32<<20)
	level := pqwrite.DefaultZstdLevel
	if v, err := strconv.Atoi(s.st.schema.Options[optZstdLevel]); err == nil && v >= 1 && v <= 22 {
		level = v
	}
	opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(level),
		parquet.WithStoreDecimalAsInteger(true), parquet.WithMaxRowGroupLength(1 << 20),
		parquet.WithDataPageSize(min(rg/4, 1<<20))}
	w := &fileWriter{s: s, name: name, rel: rel, partition: g.partition, bucket: g.bucket}
	for _, c := range s.st.schema.cols {
		w.stats = append(w.stats, newColStats(c.arrow))
	}
	// Nanosecond timestamps (TIMESTAMP(7..9)) as INT96, as Paimon Java's
	// ParquetRowDataWriter writes them: Java reads an INT64 there as
	// milliseconds.
	arrowOpts := []pqarrow.WriterOption{pqarrow.WithDeprecatedInt96Timestamps(true)}
	w.pf, err = lake.NewParquetFile(out, first.Schema(), first, lake.ParquetOptions{Props: opts, ArrowProps: arrowOpts,
		RowGroupBytes: min(rg, rowGroupBytes), Mem: mem}, w.stats)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: parquet writer", s.st.ident))
	}
	return w, nil
}

// rowGroupBytes bounds the row group a file buffers (its encoded size).
const rowGroupBytes = 4 << 20

func (w *fileWriter) write(rec arrow.RecordBatch) error {
	if err := w.pf.Write(rec); err != nil {
		return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: write %s", w.s.st.ident, w.rel))
	}
	return nil
}

// size is the file's encoded size so far.
func (w *fileWriter) size() int64 { return w.pf.Size() }

// finish closes a file and records its DataFileMeta in a CommitMessage.
func (s *stream) finish(w *fileWriter) error {
	if err := w.pf.Close(); err != nil {
		return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: close %s", s.st.ident, w.rel))
	}
	vs, err := statsRow(s.types, w.stats)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: stats of %s", s.st.ident, w.rel))
	}
	now := s.p.now().UnixMilli()
	src := w.source
	zero := int64(0)
	f := pcodec.DataFile{FileName: w.name, FileSize: w.pf.Bytes(), RowCount: w.pf.Rows(),
		MinKey: pcodec.EmptyRow, MaxKey: pcodec.EmptyRow, KeyStats: pcodec.EmptyStats, ValueStats: vs,
		MinSequenceNumber: w.seq, MaxSequenceNumber: w.seq + w.pf.Rows() - 1, SchemaID: s.st.schema.ID,
		Level: w.level, ExtraFiles: []string{}, CreationTime: &now, DeleteRowCount: &zero, FileSource: &src}
	if w.keyStats != nil {
		f.MinSequenceNumber, f.MaxSequenceNumber = w.minSeq, w.maxSeq
		ks, err := statsRow(s.typesOf(s.lay.trimmedPrimary()), w.keyStats)
		if err != nil {
			return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: key stats of %s", s.st.ident, w.rel))
		}
		f.KeyStats, f.MinKey, f.MaxKey = ks, w.minKey, w.maxKey
	}
	total := int32(s.lay.buckets)
	s.mu.Lock()
	s.done = append(s.done, pcodec.CommitMessage{Partition: w.partition, Bucket: w.bucket, TotalBuckets: &total,
		Data: pcodec.DataIncrement{NewFiles: []pcodec.DataFile{f}}})
	s.mu.Unlock()
	return nil
}

// Close flushes every open file and returns one receipt holding the
// CommitMessages of every file the stream wrote.
func (s *stream) Close(ctx context.Context) ([]catalogs.WriteReceipt, error) {
	if s.closed {
		return nil, nil
	}
	s.closed = true
	if s.lanes != nil {
		err := s.lanes.Close(ctx)
		s.lanes = nil
		if err != nil {
			s.cleanup(context.WithoutCancel(ctx))
			return nil, pqwrite.StreamErr(s.st.ident, err)
		}
	}
	if err := s.flushPK(ctx); err != nil {
		s.cleanup(context.WithoutCancel(ctx))
		return nil, err
	}
	for _, k := range sortedKeys(s.open) {
		if err := s.finish(s.open[k]); err != nil {
			s.cleanup(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	s.open = nil
	if len(s.done) == 0 {
		s.dropMark(ctx)
		return nil, nil
	}
	r, err := s.p.receipt(s.st, s.done, s.files)
	if err != nil {
		s.cleanup(context.WithoutCancel(ctx))
		return nil, err
	}
	return []catalogs.WriteReceipt{r}, nil
}

// Abort deletes every file the stream wrote.
func (s *stream) Abort(ctx context.Context) error {
	if s.closed && s.open == nil {
		return nil
	}
	s.closed = true
	s.cleanup(ctx)
	return nil
}

func (s *stream) cleanup(ctx context.Context) {
	if s.lanes != nil {
		s.lanes.Abort() // the lanes close their files first
		s.lanes = nil
	}
	for _, w := range s.open {
		w.pf.Abort()
	}
	s.open = nil
	for _, b := range s.pk {
		b.release()
	}
	s.pk = nil
	for _, f := range s.files {
		if err := s.p.fs.Remove(ctx, s.st.dir+"/"+f); err != nil {
			s.p.log.Warn("delete staged data file", "table", s.st.ident.String(), "file", f, "err", err)
		}
	}
	s.files = nil
	s.dropMark(ctx)
}

// dropMark removes the create mark of a stream that leaves no files.
func (s *stream) dropMark(ctx context.Context) {
	if k := s.st.keep; k != nil {
		k.Marks.Remove(context.WithoutCancel(ctx), s.st.ident, k.ID)
	}
}

// markID is the create mark of a staged create's stream, "" otherwise.
func (st *tableState) markID() string {
	if st.keep == nil {
		return ""
	}
	return st.keep.ID
}

// receiptMarks are the create marks of the receipts.
func receiptMarks(metas []receiptMeta) []string {
	var out []string
	for _, m := range metas {
		if m.Mark != "" {
			out = append(out, m.Mark)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// receipt wraps CommitMessages into a WriteReceipt.
func (p *Provider) receipt(st *tableState, msgs []pcodec.CommitMessage, files []string) (catalogs.WriteReceipt, error) {
	b, err := pcodec.EncodeList(receiptVersion, msgs)
	if err != nil {
		return catalogs.WriteReceipt{}, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: encode commit messages", st.ident))
	}
	var rows, bytes uint64
	for _, m := range msgs {
		for _, f := range m.Data.NewFiles {
			rows += uint64(f.RowCount)
			bytes += uint64(f.FileSize)
		}
	}
	meta, err := json.Marshal(receiptMeta{Format: receiptFormat, Table: st.ident.String(), Version: receiptVersion,
		Messages: b, Files: files, SchemaID: st.schema.ID, Create: st.create, Mark: st.markID()})
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	return catalogs.WriteReceipt{Metadata: meta, RowCount: rows, ByteCount: bytes}, nil
}

// decodeReceipts checks that receipts are this table's and returns their
// messages.
func decodeReceipts(t catalogs.TableIdent, receipts []catalogs.WriteReceipt) ([]pcodec.CommitMessage, []receiptMeta, error) {
	var msgs []pcodec.CommitMessage
	metas := make([]receiptMeta, 0, len(receipts))
	for i, r := range receipts {
		var m receiptMeta
		if err := json.Unmarshal(r.Metadata, &m); err != nil || m.Format != receiptFormat {
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d is not a Paimon receipt of this gateway", t, i)
		}
		if m.Table != t.String() {
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d belongs to table %s", t, i, m.Table)
		}
		ms, err := pcodec.DecodeList(m.Version, m.Messages)
		if err != nil {
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: %v", t, i, err)
		}
		for _, rel := range m.Files {
			if _, err := lake.Join("x", rel); err != nil {
				return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: file %q: %v", t, i, rel, err)
			}
		}
		msgs = append(msgs, ms...)
		metas = append(metas, m)
	}
	return msgs, metas, nil
}

// Discard deletes the data files the receipts staged.
func (p *Provider) Discard(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	dir, err := p.tableDir(t)
	if err != nil {
		return err
	}
	_, metas, err := decodeReceipts(t, receipts)
	if err != nil {
		return err
	}
	created := false
	for _, m := range metas {
		for _, rel := range m.Files {
			if err := p.fs.Remove(ctx, dir+"/"+rel); err != nil {
				return lake.MapErr(err, fmt.Sprintf("table %s: delete staged file %s", t, rel))
			}
		}
		created = created || m.Create != ""
	}
	if created {
		p.marks().Remove(ctx, t, receiptMarks(metas)...)
		p.dropEmptyCreate(ctx, t, dir, metas)
	}
	return nil
}
