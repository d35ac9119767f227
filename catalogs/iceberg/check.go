package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/flightgw/flightgw/catalogs"
)

var (
	_ catalogs.ReceiptChecker = (*Provider)(nil)
	_ catalogs.CommitMatcher  = (*Provider)(nil)
)

// CheckReceipts checks receipts that come back from another process (the
// commit messages of a distributed write): they are this backend's, for
// table t as it is now (its uuid, a spec and schema it has), their data
// files decode, every file lies under the table's location or its
// write.data.path, and is on storage. A receipt is data from a client: without this, a
// forged one could make a snapshot reference, or an abort delete, any
// file the gateway can reach.
func (p *Provider) CheckReceipts(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return err
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return err
	}
	roots := tableRoots(tbl)
	uuid := tbl.Metadata().TableUUID().String()
	spelt := map[string]string{} // each file as the storage reads it: its spelling
	named := map[string]int{}    // each file as spelt: the receipt naming it
	for i, rm := range rms {
		// Another process's receipts for a table since dropped and created
		// again are stale data, never to be retried (dataFiles would call
		// it a conflict, which is what a concurrent commit is).
		if !fits(rm, tbl.Metadata()) {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d was written for an earlier table of the same name (uuid %s, now %s)", t, i, rm.TableUUID, uuid)
		}
		for _, f := range rm.Files {
			if !underAny(f.Path, roots) {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: file %s is outside the table's location %s", t, i, f.Path, roots[0])
			}
			// One file named twice would be committed once, and the rows
			// reported for it twice.
			if j, ok := named[f.Path]; ok {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: file %s is named twice (by receipts %d and %d)", t, i, f.Path, j, i)
			}
			named[f.Path] = i
			// One file spelt two ways (an escaped letter) is two files to
			// iceberg-go's duplicate check: its rows would be read twice.
			// A local file is compared URL-decoded: the IO reads "%61" as
			// its characters, but falls back to the decoded path for the
			// files written there before (literalFS), so both can be one.
			if l, err := resolveLocation(f.Path); err == nil {
				key := l.String()
				if d, err := url.PathUnescape(l.path); err == nil && l.store == "file://" {
					key = l.store + d
				}
				if prev, ok := spelt[key]; ok && prev != f.Path {
					return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: file %s is named twice, as %s and %s", t, i, l, prev, f.Path)
				}
				spelt[key] = f.Path
			}
		}
	}
	if _, err := dataFiles(t, tbl.Metadata(), rms); err != nil {
		return err
	}
	return p.checkPresent(ctx, t, tbl, rms)
}

// presentWorkers bounds the concurrent existence checks of one call (an
// object store answers each in a round trip).
const presentWorkers = 16

// checkPresent refuses receipts naming a data file that is not on
// storage: aborted (AbortMessages deleted it), reclaimed, or never
// written. A snapshot referencing it would break the table for every
// reader.
func (p *Provider) checkPresent(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, rms []receiptMeta) error {
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(presentWorkers)
	for i, rm := range rms {
		for _, f := range rm.Files {
			g.Go(func() error {
				_, err := catalogs.Guard(gctx, p.storage, true, func(context.Context) (struct{}, error) {
					r, err := fsys.Open(f.Path)
					if err == nil {
						err = r.Close()
					}
					return struct{}{}, err
				})
				if errors.Is(err, fs.ErrNotExist) {
					return catalogs.Errorf(catalogs.ErrInvalidArgument,
						"table %s: receipt %d: data file %s does not exist (aborted, reclaimed or never written)", t, i, f.Path)
				}
				return mapErr(err, fmt.Sprintf("table %s: receipt %d: data file %s", t, i, f.Path))
			})
		}
	}
	return g.Wait()
}

// tableRoots are the locations a table's data files may lie under.
func tableRoots(tbl *table.Table) []string {
	roots := []string{strings.TrimSuffix(tbl.Location(), "/")}
	if d := tbl.Properties()[table.WriteDataPathKey]; d != "" {
		roots = append(roots, strings.TrimSuffix(d, "/"))
	}
	return roots
}

// underAny reports whether path lies strictly below one of roots, with no
// dot segment that could climb out of it.
func underAny(path string, roots []string) bool {
	for _, seg := range strings.Split(path, "/") {
		if seg == ".." || seg == "." {
			return false
		}
	}
	for _, r := range roots {
		if r != "" && strings.HasPrefix(path, r+"/") && len(path) > len(r)+1 {
			return true
		}
	}
	return false
}
