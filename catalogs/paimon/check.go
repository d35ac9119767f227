package paimon

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// Interfaces of the distributed commit (docs/commit-messages.md).
var (
	_ catalogs.PayloadCodec   = (*Provider)(nil)
	_ catalogs.ReceiptChecker = (*Provider)(nil)
	_ catalogs.CommitMatcher  = (*Provider)(nil)
)

// PayloadKind implements catalogs.PayloadCodec.
func (p *Provider) PayloadKind() string { return pcodec.EnvelopeKind }

// EncodePayload merges the receipts' CommitMessages into one
// CommitMessageSerializer list at receiptVersion, the version Paimon 1.4
// reads: the bytes a Java coordinator deserializes as they are.
func (p *Provider) EncodePayload(_ context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) (int, []byte, error) {
	msgs, _, err := decodeReceipts(t, receipts)
	if err != nil {
		return 0, nil, err
	}
	merged, err := pcodec.Merge(msgs)
	if err != nil {
		return 0, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %v", t, err)
	}
	b, err := pcodec.EncodeList(receiptVersion, merged)
	if err != nil {
		return 0, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: encode commit messages: %v", t, err)
	}
	return receiptVersion, b, nil
}

// DecodePayload reads a CommitMessageSerializer list of any process (a
// gateway's PrepareCommit, Paimon Java's BatchTableWrite.prepareCommit)
// into one receipt. The payload names no paths: each data file's path is
// derived from the table, the message's partition and bucket and the
// file's name, as Paimon's DataFilePathFactory does, so a payload cannot
// point anywhere else. CheckReceipts checks the rest.
func (p *Provider) DecodePayload(ctx context.Context, t catalogs.TableIdent, version int, payload []byte) ([]catalogs.WriteReceipt, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	msgs, err := pcodec.DecodeList(version, payload)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: commit messages: %v", t, err)
	}
	var files []string
	for i, m := range msgs {
		if err := st.checkMessage(i, m); err != nil {
			return nil, err
		}
		files = append(files, st.messageFiles(m)...)
	}
	r, err := p.receipt(st, msgs, files)
	if err != nil {
		return nil, err
	}
	return []catalogs.WriteReceipt{r}, nil
}

// messageFiles are the paths, relative to the table directory, of the
// data files a message adds.
func (st *tableState) messageFiles(m pcodec.CommitMessage) []string {
	dir := st.partitionDir(entry{partition: m.Partition}) + "bucket-" + strconv.Itoa(int(m.Bucket)) + "/"
	out := make([]string, len(m.Data.NewFiles))
	for i, f := range m.Data.NewFiles {
		out[i] = dir + f.FileName
	}
	return out
}

// CheckReceipts checks receipts that come back from another process: they
// are this table's, their messages decode, each message only adds data
// files (what this backend commits: no deletions, changelog, index files
// or compactions, which it would otherwise drop), its partition has the
// table's partition columns, its bucket is one of the table's buckets, and
// each file is a plain name in that bucket's directory, with no external
// path, of a schema the table has, present on storage. The receipt's file
// list must be exactly the files its messages name, so that an abort
// deletes nothing else. No file may be added twice.
func (p *Provider) CheckReceipts(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	_, metas, err := decodeReceipts(t, receipts)
	if err != nil {
		return err
	}
	st, err := p.load(ctx, t)
	if err != nil {
		return err
	}
	var all [][]pcodec.CommitMessage
	for i, m := range metas {
		msgs, err := pcodec.DecodeList(m.Version, m.Messages)
		if err != nil {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: %v", t, i, err)
		}
		var files []string
		for j, msg := range msgs {
			if err := st.checkMessage(j, msg); err != nil {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "receipt %d: %w", i, err)
			}
			files = append(files, st.messageFiles(msg)...)
		}
		if !sameFiles(files, m.Files) {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d lists files %v, its messages add %v", t, i, m.Files, files)
		}
		for _, f := range files {
			ok, err := p.fs.Exists(ctx, st.dir+"/"+f)
			if err != nil {
				return lake.MapErr(err, fmt.Sprintf("table %s: receipt %d: file %s", t, i, f))
			}
			if !ok {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: data file %s does not exist under the table's location (aborted, reclaimed or never written)", t, i, f)
			}
		}
		all = append(all, msgs)
	}
	if _, err := pcodec.Merge(all...); err != nil {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %v", t, err)
	}
	return nil
}

// sameFiles compares two file lists as sets (a stream lists its files in
// the order it opened them, its messages are in the order it closed them).
func sameFiles(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// checkMessage checks one message against the table as it is now.
func (st *tableState) checkMessage(i int, m pcodec.CommitMessage) error {
	bad := func(format string, args ...any) error {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: commit message %d (bucket %d): %s", st.ident, i, m.Bucket, fmt.Sprintf(format, args...))
	}
	s, lay := st.schema, st.schema.layout()
	if d, c := m.Data, m.Compact; len(d.DeletedFiles)+len(d.ChangelogFiles)+len(d.NewIndexFiles)+len(d.DeletedIndexFiles)+
		len(c.CompactBefore)+len(c.CompactAfter)+len(c.ChangelogFiles)+len(c.NewIndexFiles)+len(c.DeletedIndexFiles) > 0 {
		return bad("deleted, changelog or index files or a compaction: this gateway commits only new data files")
	}
	types := make([]pcodec.Type, len(s.PartitionKeys))
	for j, k := range s.PartitionKeys {
		types[j] = s.cols[s.index(k)].typ
	}
	if m.Partition.Arity() != len(types) {
		return bad("partition row of %d fields, the table has %d partition columns", m.Partition.Arity(), len(types))
	}
	if len(types) > 0 {
		if _, err := m.Partition.Values(types); err != nil {
			return bad("partition row does not decode as %v: %v", s.PartitionKeys, err)
		}
	}
	switch {
	case lay.buckets > 0 && (m.Bucket < 0 || int(m.Bucket) >= lay.buckets):
		return bad("bucket outside the table's %d buckets", lay.buckets)
	case lay.buckets <= 0 && m.Bucket != 0:
		return bad("the table has no fixed buckets (bucket %d), its files are in bucket-0", lay.buckets)
	}
	if m.TotalBuckets != nil && int(*m.TotalBuckets) != lay.buckets {
		return bad("written for %d total buckets, the table has %d", *m.TotalBuckets, lay.buckets)
	}
	for _, f := range m.Data.NewFiles {
		if !plainName(f.FileName) {
			return bad("data file name %q is not a plain file name", f.FileName)
		}
		if f.ExternalPath != nil {
			return bad("data file %s has the external path %q: files outside the table's location are refused", f.FileName, *f.ExternalPath)
		}
		if f.SchemaID < 0 || f.SchemaID > s.ID {
			return bad("data file %s: schema %d, the table's latest is %d", f.FileName, f.SchemaID, s.ID)
		}
		if f.RowCount < 0 || f.FileSize < 0 || f.Level < 0 {
			return bad("data file %s: negative row count, size or level", f.FileName)
		}
	}
	return nil
}

// plainName accepts the file names Paimon writes (data-<uuid>-<n>.parquet):
// letters, digits, '-', '_' and '.', not starting with a dot.
func plainName(n string) bool {
	if n == "" || n[0] == '.' || len(n) > 255 {
		return false
	}
	for _, c := range []byte(n) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// CheckUnreferenced refuses receipts any of whose files a snapshot of the
// table references, current or older (every snapshot still present and
// every tagged one, their base and delta manifests): deleting such a file
// would break the table for its readers, committing it again would add
// its rows twice. Manifest lists and manifests, immutable, are read once
// and kept in the table's reference index (refcheck.go), so a check reads
// only what commits since the last one wrote; referenced below is the
// same answer by a full walk.
func (p *Provider) CheckUnreferenced(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	_, metas, err := decodeReceipts(t, receipts)
	if err != nil {
		return err
	}
	st, err := p.load(ctx, t)
	if err != nil {
		return err
	}
	var files []string
	for _, m := range metas {
		files = append(files, m.Files...)
	}
	f, err := p.indexed(ctx, st, files)
	if err != nil {
		return err
	}
	if f != "" {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: file %s is referenced by a snapshot of the table (it was committed)", t, f)
	}
	return nil
}

// referenced returns the paths (relative to the table directory) of every
// data file a manifest of a present snapshot names, added or deleted, and
// of every tagged snapshot (tag/tag-<name>, which Paimon writes as a copy
// of the snapshot and keeps after the snapshot itself expired).
func (p *Provider) referenced(ctx context.Context, st *tableState) (map[string]bool, error) {
	r := refWalk{p: p, st: st, refs: map[string]bool{}, lists: map[string]bool{}, manifests: map[string]bool{}}
	if st.snap == nil {
		return r.refs, nil
	}
	for id := p.earliestID(ctx, st.dir); id > 0 && id <= st.snap.ID; id++ {
		s, err := p.readSnapshot(ctx, st.ident, st.dir, id)
		if lake.IsNotExist(err) {
			continue // expired meanwhile
		}
		if err != nil {
			return nil, lake.MapErr(err, fmt.Sprintf("table %s: snapshot-%d", st.ident, id))
		}
		if err := r.add(ctx, s); err != nil {
			return nil, err
		}
	}
	tags, err := p.readTags(ctx, st)
	if err != nil {
		return nil, err
	}
	for _, s := range tags {
		if err := r.add(ctx, s); err != nil {
			return nil, err
		}
	}
	return r.refs, nil
}

// readTags reads the table's tags (tag/tag-<name>, each a copy of a
// snapshot).
func (p *Provider) readTags(ctx context.Context, st *tableState) ([]*snapshot, error) {
	names, err := p.fs.List(ctx, st.dir+"/tag")
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: tags", st.ident))
	}
	var out []*snapshot
	for _, name := range names {
		if !strings.HasPrefix(name, "tag-") {
			continue
		}
		b, err := p.fs.Read(ctx, st.dir+"/tag/"+name)
		if lake.IsNotExist(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, lake.MapErr(err, fmt.Sprintf("table %s: tag %s", st.ident, name))
		}
		var s snapshot
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: tag %s is not Paimon snapshot JSON: %v", st.ident, name, err)
		}
		out = append(out, &s)
	}
	return out, nil
}

// refWalk collects the data files snapshots reference, reading each
// manifest list and manifest once (they are immutable).
type refWalk struct {
	p                *Provider
	st               *tableState
	refs             map[string]bool
	lists, manifests map[string]bool
}

func (r *refWalk) add(ctx context.Context, s *snapshot) error {
	for _, l := range []string{s.BaseManifestList, s.DeltaManifestList} {
		if l == "" || r.lists[l] {
			continue
		}
		r.lists[l] = true
		ms, err := r.p.readManifestList(ctx, r.st.ident, r.st.dir, l)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if r.manifests[m.FileName] {
				continue
			}
			r.manifests[m.FileName] = true
			es, err := r.p.readManifest(ctx, r.st.ident, r.st.dir, m.FileName)
			if err != nil {
				return err
			}
			for _, e := range es {
				r.refs[r.st.partitionDir(e)+"bucket-"+strconv.Itoa(int(e.bucket))+"/"+e.file.FileName] = true
			}
		}
	}
	return nil
}
