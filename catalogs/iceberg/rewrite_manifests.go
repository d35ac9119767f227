package iceberg

import (
	"context"
	"errors"
	"fmt"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// rewriteManifests merges the current snapshot's small data manifests
// into manifests of commit.manifest.target-size-bytes (default 8 MiB), as
// Iceberg Java's RewriteManifests does (iceberg-go's), in one `replace`
// snapshot that reads and writes no data file: each small append adds a
// manifest, and every later manifest list names them all. Like the data
// file rewrite it fails fast on a conflict: abandoned, what it wrote
// removed. A dry run counts the data manifests it would merge.
func (p *Provider) rewriteManifests(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return catalogs.TaskReport{Task: catalogs.TaskRewriteManifests, ExpiredSnapshots: []int64{}}, err
	}
	return p.rewriteManifestsOn(ctx, t, tbl, req)
}

// rewriteManifestsOn is rewriteManifests on tbl as read.
func (p *Provider) rewriteManifestsOn(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskRewriteManifests, ExpiredSnapshots: []int64{}}
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return tr, nil
	}
	if req.DryRun {
		fsys, err := fileIO(ctx, tbl)
		if err != nil {
			return tr, mapErr(err, fmt.Sprintf("table %s: rewrite manifests: storage", t))
		}
		target := int64(tbl.Properties().GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault))
		var bytes int64
		err = protect(catalogs.ErrUnavailable, "read manifests", func() error {
			mfs, err := cur.Manifests(fsys)
			for _, m := range mfs {
				if m.ManifestContent() == ice.ManifestContentData {
					tr.RewrittenFiles++
					bytes += m.Length()
				}
			}
			return err
		})
		if err != nil {
			return tr, mapErr(err, fmt.Sprintf("table %s: rewrite manifests: read", t))
		}
		if tr.RewrittenFiles > 1 {
			tr.AddedFiles = int(max(1, (bytes+target-1)/target))
		} else {
			tr.RewrittenFiles = 0
		}
		return tr, nil
	}
	cat := &oneShot{p: p}
	rec := &recordingIO{}
	wrapped := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), rec.wrap(tbl.FS), cat)
	var res *table.RewriteManifestsResult
	err := protect(catalogs.ErrUnavailable, "rewrite manifests", func() error {
		txn := wrapped.NewTransaction()
		var err error
		if res, err = txn.RewriteManifests(ctx); err != nil || res.IsNoOp() {
			return err
		}
		_, err = txn.Commit(ctx)
		return err
	})
	if err != nil {
		p.lostAttempt(context.WithoutCancel(ctx), tbl, cat, rec)
		if errors.Is(err, errConflict) {
			tr.Abandoned = "a writer committed first; the rewrite's manifests were removed"
			return tr, nil
		}
		return tr, mapErr(err, fmt.Sprintf("table %s: rewrite manifests", t))
	}
	if res == nil || res.IsNoOp() {
		return tr, nil
	}
	tr.Committed = true
	tr.RewrittenFiles, tr.AddedFiles = len(res.RewrittenManifests), len(res.AddedManifests)
	return tr, nil
}
