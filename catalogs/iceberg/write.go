package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/pqwrite"
)

// receiptFormat names the layout of WriteReceipt.Metadata.
const receiptFormat = "flightgw.iceberg.data-files/v1"

// receiptMeta is the JSON in WriteReceipt.Metadata: the staged data files,
// each encoded with iceberg-go's DataFile codec (the Avro manifest-entry
// bytes) against the spec, schema and format version recorded beside it.
// Paths are kept in clear so that Discard needs no decoding.
type receiptMeta struct {
	Format        string       `json:"format"`
	Table         string       `json:"table"`
	TableUUID     string       `json:"table_uuid"`
	FormatVersion int          `json:"format_version"`
	SpecID        int          `json:"spec_id"`
	SchemaID      int          `json:"schema_id"`
	Files         []stagedFile `json:"files"`
	// Replace is set, with Format replaceFormat, on the receipts of a
	// replace with a new schema (replace.go); SchemaID is then the schema
	// it replaces.
	Replace *replaceMeta `json:"replace,omitempty"`
	// Create is set on the receipts of a staged create's stream
	// (stagedcreate.go): the digest of the table the create makes, which
	// its commit checks.
	Create string `json:"create,omitempty"`
	// Mark is the create mark (lake.Marks) of a staged create's stream.
	Mark string `json:"mark,omitempty"`

	schema *ice.Schema // decoded Replace.Schema
}

// stagedFile is one data file awaiting commit.
type stagedFile struct {
	Path     string `json:"path"`
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
	DataFile []byte `json:"data_file"`
}

// WriteBatch writes batch as Parquet data files following the table's
// partition spec, without committing them. Each call writes its own files
// (one per partition the batch touches); the receipt carries them. For
// large uploads prefer OpenStream, which rolls files at the target size.
func (p *Provider) WriteBatch(ctx context.Context, t catalogs.TableIdent, batch arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	// A table the gateway cannot write as it asks is refused before any
	// file is written (newFileWriter checks again).
	if _, err := tableEncryption(t, tbl); err != nil {
		return catalogs.WriteReceipt{}, err
	}
	target, err := arrowSchema(tbl.Schema(), true)
	if err != nil {
		return catalogs.WriteReceipt{}, mapErr(err, fmt.Sprintf("table %s: schema", t))
	}
	rec, err := conform(ctx, t.String(), target, tbl.Properties(), batch)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	if rec.NumRows() == 0 {
		rec.Release()
		return p.receipt(t, tbl, nil)
	}
	// One attempt (the batch is consumed), bounded by remote.timeout-ms and
	// counted by the storage breaker.
	var w *fileWriter
	files, err := catalogs.Guard(ctx, p.storage, false, func(ctx context.Context) ([]ice.DataFile, error) {
		var err error
		if w, err = p.newFileWriter(ctx, t, tbl, target); err != nil {
			return nil, err
		}
		w.run(func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
		return w.wait()
	})
	if err != nil {
		if w == nil {
			rec.Release() // the breaker is open: nothing was written
			err = catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: object storage", t))
		}
		return catalogs.WriteReceipt{}, err
	}
	r, err := p.receipt(t, tbl, files)
	if err != nil {
		w.cleanup(context.WithoutCancel(ctx), files)
	}
	return r, err
}

// fileWriter runs iceberg-go's WriteRecords over a sequence of batches in
// its own goroutine and collects the data files it writes.
type fileWriter struct {
	p      *Provider
	ident  catalogs.TableIdent
	tbl    *table.Table
	target *arrow.Schema
	id     uuid.UUID
	ids    []uuid.UUID // of the passes after the first (passes)
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	files  []ice.DataFile
	err    error
	// refused is the first file the table's guard refused (guardWrites).
	refused refusal
}

func (p *Provider) newFileWriter(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, target *arrow.Schema) (*fileWriter, error) {
	enc, err := tableEncryption(t, tbl)
	if err != nil {
		return nil, err
	}
	if ctx, err = p.encryptContext(ctx, enc); err != nil {
		return nil, err
	}
	if tbl, err = p.refreshing(ctx, t, tbl); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	wt := p.writeTable(tbl)
	// Only the writer sees this copy; it is never committed.
	w := &fileWriter{p: p, ident: t, target: target, id: uuid.New(), ctx: wctx, cancel: cancel, done: make(chan struct{})}
	w.tbl = table.New(wt.Identifier(), wt.Metadata(), wt.MetadataLocation(), guardWrites(t, wt, &w.refused), nil)
	return w, nil
}

// maxRowGroupBytes bounds the Parquet row group a writer buffers in memory.
const maxRowGroupBytes = 32 << 20

// writeTable returns tbl with the Parquet row group size lowered to a
// quarter of the target file size (at most 32 MiB) and, unless the table
// sets one, the page size to a quarter of that (at most 1 MiB). iceberg-go
// rolls a file only once the bytes flushed reach the target, and buffers
// a row group in memory: smaller row groups make files roll near the
// target and bound the memory of each open file. A row group size the
// table sets below that bound, and a page size it sets, are kept.
func (p *Provider) writeTable(tbl *table.Table) *table.Table {
	rg := min(max(p.cfg.targetFileSize/4, 1), maxRowGroupBytes)
	_, hasLevel := tbl.Properties()[table.ParquetCompressionLevelKey]
	setLevel := !hasLevel && tbl.Properties().Get(table.ParquetCompressionKey, table.ParquetCompressionDefault) == "zstd"
	props := ice.Properties{}
	if cur, err := strconv.ParseInt(tbl.Properties()[table.ParquetRowGroupSizeBytesKey], 10, 64); err == nil && cur > 0 && cur <= rg {
		rg = cur
	} else {
		props[table.ParquetRowGroupSizeBytesKey] = strconv.FormatInt(rg, 10)
	}
	if cur, err := strconv.ParseInt(tbl.Properties()[table.ParquetPageSizeBytesKey], 10, 64); err != nil || cur <= 0 {
		// Pages are what flushes bytes within a row group: keep them smaller.
		props[table.ParquetPageSizeBytesKey] = strconv.FormatInt(min(max(rg/4, 1), 1<<20), 10)
	}
	if setLevel {
		props[table.ParquetCompressionLevelKey] = strconv.Itoa(defaultZstdLevel)
	}
	if len(props) == 0 {
		return tbl
	}
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return tbl
	}
	if err := b.SetProperties(props); err != nil {
		return tbl
	}
	meta, err := b.Build()
	if err != nil {
		return tbl
	}
	// Only the writer sees this copy; it is never committed.
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil)
}

// run starts writing batches; wait returns the result.
func (w *fileWriter) run(batches iter.Seq2[arrow.RecordBatch, error]) {
	go func() {
		defer close(w.done)
		w.err = protect(catalogs.ErrInvalidArgument, fmt.Sprintf("table %s: write data files", w.ident), func() error {
			if useLanes(w.tbl) {
				return w.runLanes(batches)
			}
			// Rows in and rows in the files must agree: iceberg-go's
			// partitioned writer can lose the error of a partition's
			// writer (see guardWrites), and with it that partition's rows.
			var sent int64
			if err := w.passes(batches, &sent); err != nil {
				return err
			}
			if err := w.refused.get(); err != nil {
				return err
			}
			var written int64
			for _, df := range w.files {
				written += df.Count()
			}
			if written != sent {
				return catalogs.Errorf(catalogs.ErrUnavailable, "table %s: the Parquet writer wrote %d of the %d rows sent; nothing of this write is kept", w.ident, written, sent)
			}
			return nil
		})
	}()
}

// passes writes batches with WriteRecords, counting the rows sent into
// *sent. While the upload's partitions fit into cfg.maxOpenFiles, it is
// one pass of iceberg-go's fanout writer (a file open per partition). The
// batch that would open one more ends that pass (its rows of the open
// partitions, and of as many new ones as there is room for, still go to
// it: partitionCounter.split), and the rest of the upload is written in
// clustered passes: up to clusterBytes of batches regrouped by partition
// (partitionCounter.cluster) and written by iceberg-go's clustered writer,
// one file open at a time. Memory stays bounded either way; the price of
// an upload spread over many partitions is a file per partition per pass.
func (w *fileWriter) passes(batches iter.Seq2[arrow.RecordBatch, error], sent *int64) error {
	counter := newPartitionCounter(w.tbl.Spec(), w.tbl.Schema(), w.p.cfg.maxOpenFiles)
	next, stop := iter.Pull2(batches)
	defer stop()
	var carry arrow.RecordBatch // the rows the last pass had no room for
	defer func() {
		if carry != nil {
			carry.Release()
		}
	}()
	clustered := false
	for i := 0; ; i++ {
		ended := false
		var pass iter.Seq2[arrow.RecordBatch, error]
		if !clustered {
			pass = func(yield func(arrow.RecordBatch, error) bool) {
				for {
					b, err, ok := next()
					if !ok {
						return
					}
					if err != nil {
						yield(nil, err)
						return
					}
					if b != nil && counter != nil {
						ordered, n, err := counter.split(w.ctx, b)
						b.Release()
						if err != nil {
							yield(nil, err)
							return
						}
						b = ordered
						if n < b.NumRows() {
							ended, clustered = true, true
							carry = b.NewSlice(n, b.NumRows())
							head := b.NewSlice(0, n)
							b.Release()
							if n == 0 {
								head.Release()
								return
							}
							*sent += n
							yield(head, nil)
							return
						}
					}
					if b != nil {
						*sent += b.NumRows()
					}
					if !yield(b, nil) {
						return
					}
				}
			}
		} else {
			buf, more, err := w.gather(next, &carry)
			if err != nil {
				return err
			}
			if len(buf) == 0 {
				return nil
			}
			parts, err := counter.cluster(w.ctx, buf)
			if err != nil {
				return err
			}
			ended = more
			pass = func(yield func(arrow.RecordBatch, error) bool) {
				for j, b := range parts {
					*sent += b.NumRows()
					if !yield(b, nil) {
						for _, rest := range parts[j+1:] {
							rest.Release()
						}
						return
					}
				}
			}
		}
		id := w.id
		if i > 0 {
			// Each pass names its files after its own id: iceberg-go numbers
			// them from zero on every call.
			id = uuid.New()
			w.ids = append(w.ids, id)
		}
		opts := []table.WriteRecordOption{table.WithTargetFileSize(w.p.cfg.targetFileSize), table.WithWriteUUID(id)}
		if i > 0 && clustered {
			opts = append(opts, table.WithClusteredWrite())
		} else {
			opts = append(opts, table.WithRecordBatchBufferSize(2))
		}
		for df, err := range table.WriteRecords(w.ctx, w.tbl, w.target, pass, opts...) {
			if err != nil {
				return err
			}
			w.files = append(w.files, df)
		}
		if !ended {
			return nil
		}
	}
}

// clusterBytes bounds the Arrow bytes of one clustered pass (passes); the
// regrouping holds about twice that. A variable for tests.
var clusterBytes int64 = 32 << 20

// gather takes batches from next (first *carry) until they hold
// clusterBytes or the upload ends, and reports whether more may follow.
func (w *fileWriter) gather(next func() (arrow.RecordBatch, error, bool), carry *arrow.RecordBatch) ([]arrow.RecordBatch, bool, error) {
	var buf []arrow.RecordBatch
	var size int64
	if *carry != nil {
		buf, size = append(buf, *carry), pqwrite.BatchBytes(*carry)
		*carry = nil
	}
	for size < clusterBytes {
		b, err, ok := next()
		if !ok {
			return buf, false, nil
		}
		if err != nil {
			for _, b := range buf {
				b.Release()
			}
			return nil, false, err
		}
		if b == nil || b.NumRows() == 0 {
			if b != nil {
				b.Release()
			}
			continue
		}
		buf, size = append(buf, b), size+pqwrite.BatchBytes(b)
	}
	return buf, true, nil
}

// wait waits for the writer and, on failure, removes what it wrote.
func (w *fileWriter) wait() ([]ice.DataFile, error) {
	<-w.done
	w.cancel()
	if w.err != nil {
		w.cleanup(context.WithoutCancel(w.ctx), w.files)
		kind := catalogs.ErrUnavailable
		if catalogs.Kind(w.err) != nil || errors.Is(w.err, ice.ErrInvalidSchema) || catalogs.NameTooLong(w.err) {
			kind = nil
		}
		if kind != nil {
			return nil, catalogs.Wrap(kind, w.err, fmt.Sprintf("table %s: write data files", w.ident))
		}
		return nil, mapErr(w.err, fmt.Sprintf("table %s: write data files", w.ident))
	}
	return w.files, nil
}

// cleanup deletes the files the writer reported and sweeps the data
// directory for files of this write that it never reported (a write
// cancelled mid-file). It deletes nothing outside the table's location.
func (w *fileWriter) cleanup(ctx context.Context, files []ice.DataFile) {
	fsys, err := fileIO(ctx, w.tbl)
	if err != nil {
		return
	}
	loc, err := resolveLocation(w.tbl.Location())
	if err != nil {
		return
	}
	for _, f := range files {
		if checkFile(w.ident, loc, f.FilePath()) == nil {
			_ = removeFile(fsys, f.FilePath())
		}
	}
	l, ok := fsys.(iceio.ListableIO)
	if !ok {
		return
	}
	root := dataRoot(w.tbl)
	var stray []string
	_ = l.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d != nil && !d.IsDir() && slices.ContainsFunc(append([]uuid.UUID{w.id}, w.ids...), func(id uuid.UUID) bool {
			return strings.Contains(path, id.String())
		}) {
			stray = append(stray, path)
		}
		return nil
	})
	for _, path := range stray {
		if checkFile(w.ident, loc, path) == nil {
			_ = removeFile(fsys, path)
		}
	}
}

// dataRoot is where the table writes data files.
func dataRoot(tbl *table.Table) string {
	if p := tbl.Properties()[table.WriteDataPathKey]; p != "" {
		return strings.TrimSuffix(p, "/")
	}
	return strings.TrimSuffix(tbl.Location(), "/") + "/data"
}

// removeFile deletes a file; a file already gone is not an error.
func removeFile(fsys iceio.IO, path string) error {
	err := fsys.Remove(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// receipt encodes files into one receipt.
func (p *Provider) receipt(t catalogs.TableIdent, tbl *table.Table, files []ice.DataFile) (catalogs.WriteReceipt, error) {
	return p.receiptFor(t, tbl, files, nil, "", "")
}

// receiptFor encodes files written under tbl's current schema into one
// receipt; rep is set when that schema is a replace's new one, create
// when tbl is a staged create's (its digest).
func (p *Provider) receiptFor(t catalogs.TableIdent, tbl *table.Table, files []ice.DataFile, rep *replacement, create, mark string) (catalogs.WriteReceipt, error) {
	meta := tbl.Metadata()
	spec := meta.PartitionSpec()
	sc := meta.CurrentSchema()
	rm := receiptMeta{Format: receiptFormat, Table: t.String(), TableUUID: meta.TableUUID().String(),
		FormatVersion: meta.Version(), SpecID: spec.ID(), SchemaID: sc.ID, Files: []stagedFile{}, Create: create, Mark: mark}
	if rep != nil {
		raw, err := json.Marshal(rep.schema)
		if err != nil {
			return catalogs.WriteReceipt{}, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: receipt schema", t))
		}
		rm.Format, rm.SchemaID = replaceFormat, rep.baseSchemaID
		rm.Replace = &replaceMeta{Schema: raw, BaseSchemaID: rep.baseSchemaID, BaseLastColumnID: rep.baseLastColumnID}
	}
	var rows, size uint64
	for _, f := range files {
		var b []byte
		err := protect(catalogs.ErrInvalidArgument, "encode data file", func() (err error) {
			b, err = codec.EncodeDataFile(f, spec, sc, meta.Version())
			return err
		})
		if err != nil {
			return catalogs.WriteReceipt{}, mapErr(err, fmt.Sprintf("table %s: encode data file %s", t, f.FilePath()))
		}
		rm.Files = append(rm.Files, stagedFile{Path: f.FilePath(), Rows: f.Count(), Bytes: f.FileSizeBytes(), DataFile: b})
		rows += uint64(max(0, f.Count()))
		size += uint64(max(0, f.FileSizeBytes()))
	}
	raw, err := json.Marshal(rm)
	if err != nil {
		return catalogs.WriteReceipt{}, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: receipt", t))
	}
	return catalogs.WriteReceipt{Metadata: raw, RowCount: rows, ByteCount: size}, nil
}

// parseReceipts decodes the receipts' metadata, checking they were made by
// this backend for table t. It checks t's name first: commits and
// discards start here.
func parseReceipts(t catalogs.TableIdent, receipts []catalogs.WriteReceipt) ([]receiptMeta, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	out := make([]receiptMeta, 0, len(receipts))
	for i, r := range receipts {
		var rm receiptMeta
		if err := json.Unmarshal(r.Metadata, &rm); err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: not an iceberg receipt: %v", t, i, err)
		}
		if (rm.Format != receiptFormat || rm.Replace != nil) && (rm.Format != replaceFormat || rm.Replace == nil) {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: format %q is not %q or %q with a replace", t, i, rm.Format, receiptFormat, replaceFormat)
		}
		if rm.Table != t.String() {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d was written for table %s", t, i, rm.Table)
		}
		if rm.Replace != nil {
			err := protect(catalogs.ErrInvalidArgument, "decode schema", func() error {
				rm.schema = new(ice.Schema)
				if err := json.Unmarshal(rm.Replace.Schema, rm.schema); err != nil {
					return err
				}
				if len(rm.schema.Fields()) == 0 {
					return errors.New("no columns")
				}
				_, err := arrowSchema(rm.schema, true)
				return err
			})
			if err != nil {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: schema: %v", t, i, err)
			}
		}
		out = append(out, rm)
	}
	return out, nil
}

// dataFiles decodes the files of receipts against the table they were
// written for. A receipt comes from a client: a file outside the table's
// location is refused, never committed.
func dataFiles(t catalogs.TableIdent, meta table.Metadata, rms []receiptMeta) ([]ice.DataFile, error) {
	loc, err := resolveLocation(meta.Location())
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: location refused: %v", t, err)
	}
	var out []ice.DataFile
	seen := map[string]bool{}
	for _, rm := range rms {
		if !fits(rm, meta) {
			return nil, catalogs.Errorf(catalogs.ErrConflict, "table %s: receipt was written for an earlier table of the same name (uuid %s, now %s)", t, rm.TableUUID, meta.TableUUID())
		}
		spec := meta.PartitionSpecByID(rm.SpecID)
		sc := rm.schema // a replace's files follow its new schema
		for _, s := range meta.Schemas() {
			if sc == nil && s.ID == rm.SchemaID {
				sc = s
			}
		}
		if spec == nil || sc == nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt names spec %d / schema %d the table does not have", t, rm.SpecID, rm.SchemaID)
		}
		for _, f := range rm.Files {
			if seen[f.Path] {
				continue // the same receipt passed twice adds its files once
			}
			if err := checkFile(t, loc, f.Path); err != nil {
				return nil, err
			}
			seen[f.Path] = true
			var df ice.DataFile
			err := protect(catalogs.ErrInvalidArgument, "decode data file", func() (err error) {
				df, err = codec.DecodeDataFile(f.DataFile, *spec, sc, rm.FormatVersion)
				return err
			})
			if err != nil {
				return nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: receipt file %s", t, f.Path))
			}
			if df.FilePath() != f.Path {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt file %s does not match its data file %s", t, f.Path, df.FilePath())
			}
			out = append(out, df)
		}
	}
	return out, nil
}

// Discard deletes the staged files the receipts name. Files already gone
// are fine; the table itself need not exist any more.
func (p *Provider) Discard(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return err
	}
	var paths []string
	for _, rm := range rms {
		for _, f := range rm.Files {
			paths = append(paths, f.Path)
		}
	}
	if len(paths) == 0 {
		p.dropMarks(ctx, t, rms)
		return nil
	}
	fsys, root, ok, err := p.discardIO(ctx, t, paths[0])
	if err != nil {
		return err
	}
	if !ok {
		// The table is gone and no warehouse is configured to check the
		// paths against: delete nothing rather than trust the receipt.
		p.log.WarnContext(ctx, "discard: table dropped, staged files left", "table", t.String(), "files", len(paths))
		return nil
	}
	for _, path := range paths {
		// A receipt is data from a client: never delete outside the table
		// (or, once it is gone, the warehouse), read as the storage reads it.
		if err := checkFile(t, root, path); err != nil {
			return err
		}
	}
	var errs []error
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: discard", t))
		}
		_, err := catalogs.Guard(ctx, p.storage, true, func(context.Context) (struct{}, error) {
			return struct{}{}, removeFile(fsys, path)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	if len(errs) > 0 {
		return catalogs.Wrap(catalogs.ErrUnavailable, errors.Join(errs...), fmt.Sprintf("table %s: discard staged files", t))
	}
	// The marks last: files a failed discard left are still found by
	// theirs.
	p.dropMarks(ctx, t, rms)
	return nil
}

// discardIO finds the storage of the staged files and the location they
// must lie under: the table's when it still exists, else the warehouse's;
// ok is false when there is neither.
func (p *Provider) discardIO(ctx context.Context, t catalogs.TableIdent, path string) (iceio.IO, storeLoc, bool, error) {
	tbl, err := p.load(ctx, t)
	if err == nil {
		loc, err := p.checkTable(t, tbl)
		if err != nil {
			return nil, storeLoc{}, false, err
		}
		fsys, err := fileIO(ctx, tbl)
		return fsys, loc, true, err
	}
	if !errors.Is(err, catalogs.ErrNotFound) {
		return nil, storeLoc{}, false, err
	}
	w, ok, err := p.warehouseLoc()
	if err != nil || !ok {
		return nil, storeLoc{}, false, err
	}
	fsys, err := iceio.LoadFS(ctx, p.cfg.passthrough, path)
	if err != nil {
		return nil, storeLoc{}, false, mapErr(err, fmt.Sprintf("table %s: storage for %s", t, path))
	}
	return fsys, w, true, nil
}
