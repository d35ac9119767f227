package paimon

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
)

// Table options of manifest compaction, as Paimon's CoreOptions names
// them, with Paimon 1.4's defaults. Every commit merges the manifests of
// the previous snapshot into its base manifest list the way Paimon Java's
// FileStoreCommitImpl does (ManifestFileMerger): otherwise each commit
// adds a manifest file and every scan reads them all.
const (
	// optManifestTargetSize is the size merged manifest files roll at.
	optManifestTargetSize = "manifest.target-file-size"
	// optManifestMergeMinCount is how many small manifests a minor
	// compaction waits for.
	optManifestMergeMinCount = "manifest.merge-min-count"
	// optManifestFullThreshold is the size of small and deleting
	// manifests from which a full compaction drops every deleted entry.
	optManifestFullThreshold = "manifest.full-compaction-threshold-size"

	defaultManifestTargetSize    = 8 << 20
	defaultManifestMergeMinCount = 30
	defaultManifestFullThreshold = 16 << 20
)

// manifestOptions are a table's manifest compaction options.
type manifestOptions struct {
	targetSize    int64
	minCount      int
	fullThreshold int64
}

// parseManifestOptions reads a table's manifest options; a value Paimon
// Java would refuse is an error naming the option (the caller gives it
// its kind: the client's fault at create, the table's at commit).
func parseManifestOptions(opts map[string]string) (manifestOptions, error) {
	o := manifestOptions{targetSize: defaultManifestTargetSize, minCount: defaultManifestMergeMinCount, fullThreshold: defaultManifestFullThreshold}
	for _, sz := range []struct {
		key string
		dst *int64
	}{{optManifestTargetSize, &o.targetSize}, {optManifestFullThreshold, &o.fullThreshold}} {
		v, ok := opts[sz.key]
		if !ok {
			continue
		}
		n, err := parseMemorySize(v)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("option %s %q is not a positive memory size (bytes, or a number with b, kb, mb, gb or tb)", sz.key, v)
		}
		*sz.dst = n
	}
	if v, ok := opts[optManifestMergeMinCount]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return o, fmt.Errorf("option %s %q is not a positive integer", optManifestMergeMinCount, v)
		}
		o.minCount = n
	}
	return o, nil
}

// parseMemorySize parses a size as Paimon's MemorySize.parse does: a
// non-negative integer, then an optional unit (b, bytes, k, kb, kibibytes,
// m, mb, mebibytes, g, gb, gibibytes, t, tb, tebibytes; binary
// multiples, case-insensitive).
func parseMemorySize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q does not start with a number", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, err
	}
	mult := int64(1)
	switch strings.ToLower(strings.TrimSpace(s[i:])) {
	case "", "b", "bytes":
	case "k", "kb", "kibibytes":
		mult = 1 << 10
	case "m", "mb", "mebibytes":
		mult = 1 << 20
	case "g", "gb", "gibibytes":
		mult = 1 << 30
	case "t", "tb", "tebibytes":
		mult = 1 << 40
	default:
		return 0, fmt.Errorf("%q: unknown unit", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q overflows", s)
	}
	return n * mult, nil
}

// mergeManifests is ManifestFileMerger.merge: a full compaction when the
// small and deleting manifests reach the full-compaction threshold, else
// a minor one. Files it writes are recorded in w (for cleanup when the
// commit loses its race); the input files are never deleted, older
// snapshots still name them.
func (p *Provider) mergeManifests(ctx context.Context, st *tableState, in []manifestMeta, o manifestOptions, w *manifestWriter) ([]manifestMeta, error) {
	out, done, err := p.fullCompaction(ctx, st, in, o, w)
	if err != nil || done {
		return out, err
	}
	return p.minorCompaction(ctx, st, in, o, w)
}

// minorCompaction merges runs of manifests that together reach the
// target size, and the last run when it has at least merge-min-count
// files. Within a run an ADD and a later DELETE of the same file cancel;
// a DELETE whose ADD is in an earlier run is kept.
func (p *Provider) minorCompaction(ctx context.Context, st *tableState, in []manifestMeta, o manifestOptions, w *manifestWriter) ([]manifestMeta, error) {
	var out, run []manifestMeta
	var size int64
	merge := func() error {
		if len(run) == 1 {
			out = append(out, run[0])
			return nil
		}
		var set entrySet
		for _, m := range run {
			es, err := p.readManifest(ctx, st.ident, st.dir, m.FileName)
			if err != nil {
				return err
			}
			for _, e := range es {
				if err := set.merge(st, m.FileName, e); err != nil {
					return err
				}
			}
		}
		metas, err := w.write(ctx, set.entries())
		out = append(out, metas...)
		return err
	}
	for _, m := range in {
		size += m.FileSize
		run = append(run, m)
		if size >= o.targetSize {
			if err := merge(); err != nil {
				return nil, err
			}
			run, size = nil, 0
		}
	}
	if len(run) >= o.minCount {
		if err := merge(); err != nil {
			return nil, err
		}
	} else {
		out = append(out, run...)
	}
	return out, nil
}

// fullCompaction drops every DELETE entry and the ADD entries they
// delete, rewriting the small and deleting manifests (and any large one
// holding a deleted file) into files of the target size. It runs only
// when the manifests it must rewrite reach the threshold, and reports
// false when it did not run.
func (p *Provider) fullCompaction(ctx context.Context, st *tableState, in []manifestMeta, o manifestOptions, w *manifestWriter) ([]manifestMeta, bool, error) {
	mustChange := func(m manifestMeta) bool { return m.NumDeleted > 0 || m.FileSize < o.targetSize }
	var delta int64
	for _, m := range in {
		if mustChange(m) {
			delta += m.FileSize
		}
	}
	if delta < o.fullThreshold {
		return nil, false, nil
	}
	deleted := map[string]bool{}
	for _, m := range in {
		if m.NumDeleted == 0 {
			continue
		}
		es, err := p.readManifest(ctx, st.ident, st.dir, m.FileName)
		if err != nil {
			return nil, false, err
		}
		for _, e := range es {
			if e.kind == fileDelete {
				deleted[fileKey(e)] = true
			}
		}
	}
	// Large manifests without deleted files stay as they are. (Paimon
	// also keeps, unread, large manifests whose partition stats exclude
	// every deleting partition; here they are read, which costs a read,
	// not a rewrite.)
	var out, merge []manifestMeta
	for _, m := range in {
		if len(deleted) == 0 && !mustChange(m) {
			out = append(out, m)
		} else {
			merge = append(merge, m)
		}
	}
	if len(merge) <= 1 {
		return nil, false, nil
	}
	var keep []entry
	for _, m := range merge {
		es, err := p.readManifest(ctx, st.ident, st.dir, m.FileName)
		if err != nil {
			return nil, false, err
		}
		change := mustChange(m)
		var adds []entry
		for _, e := range es {
			switch {
			case e.kind == fileDelete:
			case deleted[fileKey(e)]:
				change = true
			default:
				adds = append(adds, e)
			}
		}
		if change {
			keep = append(keep, adds...)
		} else {
			out = append(out, m)
		}
	}
	metas, err := w.write(ctx, keep)
	if err != nil {
		return nil, false, err
	}
	return append(out, metas...), true, nil
}

// entrySet is FileEntry.mergeEntries: entries by file identifier, in
// first-seen order.
type entrySet struct {
	keys []string
	m    map[string]entry
}

// merge folds one entry in: an ADD is recorded; a DELETE cancels the ADD
// it deletes, or is recorded when that ADD is in an earlier manifest.
// Paimon refuses a file added twice; here the later ADD wins, as the
// scan's liveFiles reads it, so that one bad commit does not stop every
// later one.
func (s *entrySet) merge(st *tableState, manifest string, e entry) error {
	if s.m == nil {
		s.m = map[string]entry{}
	}
	k := fileKey(e)
	switch e.kind {
	case fileAdd:
		if _, ok := s.m[k]; !ok {
			s.keys = append(s.keys, k)
		}
		s.m[k] = e
	case fileDelete:
		if old, ok := s.m[k]; ok && old.kind == fileAdd {
			delete(s.m, k)
			return nil
		}
		if _, ok := s.m[k]; !ok {
			s.keys = append(s.keys, k)
		}
		s.m[k] = e
	default:
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: manifest %s: unknown file kind %d", st.ident, manifest, e.kind)
	}
	return nil
}

// entries are the set's entries in first-seen order.
func (s *entrySet) entries() []entry {
	out := make([]entry, 0, len(s.m))
	for _, k := range s.keys {
		if e, ok := s.m[k]; ok {
			out = append(out, e)
			delete(s.m, k) // a key removed and re-added is listed once
		}
	}
	return out
}
