package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

var _ catalogs.FilePlanner = (*Provider)(nil)

// reasonNoSnapshot is the Reason of the plan of a table without data.
const reasonNoSnapshot = "the table has no snapshot"

// PlanFiles plans a scan like Scan does (same pruning) and returns its
// data files as local paths. The plan is plain only when DuckDB, reading
// the files by column name, sees exactly what Scan would return; when in
// doubt it is not plain and the engine scans through Scan.
func (p *Provider) PlanFiles(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.FilePlan, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	plan := &catalogs.FilePlan{}
	root, ok := localRoot(p.cfg.warehouse)
	if !ok {
		plan.Reason = "the warehouse is not a local directory"
		return plan, nil
	}
	plan.Root = root
	if reason := plainTable(tbl.Metadata()); reason != "" {
		plan.Reason = reason
		return plan, nil
	}
	snap := tbl.CurrentSnapshot()
	if req.SnapshotID != nil {
		snap = tbl.SnapshotByID(*req.SnapshotID)
		if snap == nil {
			return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s: snapshot %d does not exist", t, *req.SnapshotID)
		}
	}
	if snap == nil {
		plan.Reason = reasonNoSnapshot
		return plan, nil
	}
	if snap.Summary != nil {
		plan.FilesTotal, _ = strconv.Atoi(snap.Summary.Properties["total-data-files"])
	}
	opts := []table.ScanOption{}
	if req.SnapshotID != nil {
		opts = append(opts, table.WithSnapshotID(*req.SnapshotID))
	}
	filter, err := filterExpr(tbl.Schema(), req.Filters)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t, err)
	}
	opts = append(opts, table.WithRowFilter(filter))
	var tasks []table.FileScanTask
	err = protect(catalogs.ErrInvalidArgument, "plan files", func() (err error) {
		tasks, err = tbl.Scan(opts...).PlanFiles(ctx)
		return err
	})
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s: plan files", t))
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		path, reason := plainTask(task, root)
		if reason != "" {
			plan.Files, plan.FileBytes, plan.Reason = nil, nil, reason
			return plan, nil
		}
		if !seen[path] {
			seen[path] = true
			plan.Files = append(plan.Files, path)
			plan.FileBytes = append(plan.FileBytes, task.File.FileSizeBytes())
		}
	}
	plan.Plain = true
	id := snap.SnapshotID
	plan.SnapshotID = &id
	return plan, nil
}

// plainTable says why files of a table cannot be read by name as they
// are, or "" when they can. A table whose schema never changed has every
// data file written with its current schema (iceberg-go writes the
// Iceberg names; files added from elsewhere are matched to the schema by
// name through the name mapping, which names alike).
func plainTable(md table.Metadata) string {
	if md.Version() > 2 {
		return fmt.Sprintf("format version %d (defaults, row lineage)", md.Version())
	}
	if n := len(md.Schemas()); n != 1 {
		return fmt.Sprintf("the schema has evolved (%d schemas)", n)
	}
	if md.CurrentSchema() == nil || md.Schemas()[0].ID != md.CurrentSchema().ID {
		return "the data files were written with another schema"
	}
	return ""
}

// plainTask returns the local path of a planned file, or why it cannot be
// read as it is.
func plainTask(task table.FileScanTask, root string) (path, reason string) {
	f := task.File
	if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
		return "", fmt.Sprintf("data file %s has delete files", f.FilePath())
	}
	if f.FileFormat() != ice.ParquetFile {
		return "", fmt.Sprintf("data file %s is %s, not Parquet", f.FilePath(), f.FileFormat())
	}
	path, ok := localPath(f.FilePath())
	if !ok {
		return "", fmt.Sprintf("data file %s is not a plain local path", f.FilePath())
	}
	if !under(path, root) {
		return "", fmt.Sprintf("data file %s is outside the warehouse %s", path, root)
	}
	return path, ""
}

// localRoot is the warehouse as a clean absolute local directory.
func localRoot(warehouse string) (string, bool) {
	p, ok := localPath(warehouse)
	if !ok {
		return "", false
	}
	return p, true
}

// localPath turns "file:///abs/path" or "/abs/path" into a clean absolute
// path, read by its characters as the table's IO reads it (literalFS; a
// file written before at its URL-decoded path is found there). Paths
// DuckDB would expand as a glob, or that are not already clean, are
// refused: the engine must read exactly the planned file.
func localPath(s string) (string, bool) {
	p := s
	if !strings.HasPrefix(s, "/") {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.RawQuery != "" || u.Fragment != "" {
			return "", false
		}
		p = literalPath(s)
		if d, ok := decodedPath(s); ok {
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				if _, err := os.Stat(d); err == nil {
					p = d
				}
			}
		}
	}
	if !filepath.IsAbs(p) || strings.ContainsAny(p, "*?[]{}\\'\"\x00\n\r") {
		return "", false
	}
	clean := filepath.Clean(p)
	if clean != strings.TrimSuffix(p, "/") && clean != p {
		return "", false
	}
	return clean, true
}

// under reports whether path lies inside dir.
func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
