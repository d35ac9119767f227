package lake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// FileKind is what a reclaimable file is, for the report's counts.
type FileKind int

// The kinds of orphan a reclaim counts (catalogs.ReclaimReport).
const (
	KindData     FileKind = iota // a staged data file
	KindManifest                 // a manifest or manifest list
	KindMetadata                 // a metadata file or a temporary file of an atomic write
)

// Candidate is a file the table format's layout produces and a reclaimer
// may delete: Path is what it reports and deletes, Ref what the
// references are looked up by (they may differ: Paimon's refer relative to
// the table directory).
type Candidate struct {
	Path, Ref string
	Kind      FileKind
	Size      int64
	Mod       time.Time
}

// Table is one table's side of a reclaim, a table format's: which files
// are candidates and which are referenced. The floor owns the age, the
// second read before deleting, and the deletion.
type Table interface {
	// Refs reads what the table's metadata references, adding to what an
	// earlier call read (a commit may have landed since). same is false
	// when the table is no longer the one first read (dropped and created
	// again): nothing is deleted.
	Refs(ctx context.Context) (same bool, err error)
	// Referenced tells whether the metadata read so far reaches ref;
	// Held whether a live unit of work holds it.
	Referenced(ref string) bool
	Held(ref string) bool
	// Candidates calls fn for every candidate under the table.
	Candidates(ctx context.Context, fn func(Candidate) error) error
	// Delete deletes a candidate's path.
	Delete(ctx context.Context, path string) error
}

// Reclaimer runs the reclaim of one table at a time for a backend.
type Reclaimer struct {
	Log *slog.Logger
	// MetadataName names the report's MetadataFiles in the log
	// ("metadata", "temporary").
	MetadataName string
	// BeforeRecheck, set by tests only, runs between the listing and the
	// second read of the references, where a commit may land.
	BeforeRecheck func(catalogs.TableIdent)
}

// All reclaims every table of catalog name with reclaim, summing the
// reports: a table reclaim finds gone (ErrNotFound) is not counted, one
// that fails is counted in TablesFailed and its error joined.
func All(ctx context.Context, name string, opts catalogs.ReclaimOptions, tables []catalogs.TableIdent,
	reclaim func(ctx context.Context, t catalogs.TableIdent, cutoff time.Time) (catalogs.ReclaimReport, error)) (catalogs.ReclaimReport, error) {
	var rep catalogs.ReclaimReport
	if opts.MinAge <= 0 {
		return rep, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: reclaim: min age %v is not positive", name, opts.MinAge)
	}
	cutoff := time.Now().Add(-opts.MinAge)
	var errs []error
	for _, t := range tables {
		r, err := reclaim(ctx, t, cutoff)
		if errors.Is(err, catalogs.ErrNotFound) {
			continue // dropped meanwhile
		}
		rep.Tables++
		rep.Add(r)
		if err != nil {
			rep.TablesFailed++
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return rep, errors.Join(errs...)
}

// Reclaim deletes (or with opts.DryRun, reports) the candidates of table
// t that its references do not reach, last modified before cutoff and held
// by no live unit of work: the references are read, the candidates
// listed, the references read again (a commit may have landed meanwhile),
// and only what they still do not reach is deleted.
func (r Reclaimer) Reclaim(ctx context.Context, t catalogs.TableIdent, tbl Table, opts catalogs.ReclaimOptions, cutoff time.Time) (catalogs.ReclaimReport, error) {
	var rep catalogs.ReclaimReport
	if _, err := tbl.Refs(ctx); err != nil {
		return rep, err
	}
	var found []Candidate
	werr := tbl.Candidates(ctx, func(c Candidate) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if tbl.Referenced(c.Ref) {
			return nil
		}
		if c.Mod.IsZero() || !c.Mod.Before(cutoff) || tbl.Held(c.Ref) {
			rep.Young++
			return nil
		}
		found = append(found, c)
		return nil
	})
	if werr != nil {
		return rep, MapErr(werr, fmt.Sprintf("table %s: reclaim: list files", t))
	}
	if len(found) == 0 {
		return rep, nil
	}
	if r.BeforeRecheck != nil {
		r.BeforeRecheck(t)
	}
	if same, err := tbl.Refs(ctx); err != nil || !same {
		return rep, err // recreated meanwhile: the next run sees the new table
	}
	var errs []error
	for _, c := range found {
		if tbl.Referenced(c.Ref) {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if opts.DryRun {
			rep.Orphans = append(rep.Orphans, c.Path)
		} else if err := tbl.Delete(ctx, c.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Path, err))
			continue
		}
		count(&rep, c)
	}
	if r.Log != nil {
		rep.LogTable(ctx, r.Log, t, opts.DryRun, r.MetadataName)
	}
	if len(errs) > 0 {
		return rep, catalogs.Wrap(catalogs.ErrUnavailable, errors.Join(errs...), fmt.Sprintf("table %s: reclaim: delete orphan files", t))
	}
	return rep, nil
}

// count adds a deleted (or found) candidate to rep.
func count(rep *catalogs.ReclaimReport, c Candidate) {
	switch c.Kind {
	case KindData:
		rep.DataFiles++
	case KindManifest:
		rep.ManifestFiles++
	case KindMetadata:
		rep.MetadataFiles++
	}
	rep.Bytes += c.Size
}
