package paimon

import (
	"context"
	"errors"
	"fmt"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

var _ catalogs.Uncreator = (*Provider)(nil)

// unwrittenMark is what DropUnwritten puts in snapshot-1's place: not
// JSON, so a committer that lost snapshot-1 to it fails on reading it
// instead of building snapshot-2 on a table about to be removed.
var unwrittenMark = []byte("flightgw: table dropped, its create failed before its first commit\n")

// DropUnwritten implements catalogs.Uncreator. It takes snapshot-1's
// place with put-if-absent (under the JDBC lock when the catalog has
// one), as a commit would: won, no commit can land any more and the table
// goes; lost, a commit has landed and the table stays.
//
// The files go in an order that never reaches another table of the same
// name: everything but schema-0 and the mark first, then schema-0 (until
// then a create gets AlreadyExists, and an append fails on the mark),
// then the mark and the directories, each only if empty, so that a
// create that starts once schema-0 is gone keeps its files.
func (p *Provider) DropUnwritten(ctx context.Context, t catalogs.TableIdent) (bool, error) {
	dir, err := p.tableDir(t)
	if err != nil {
		return false, err
	}
	mark := snapshotPath(dir, 1)
	switch err := p.createLocked(ctx, t, mark, unwrittenMark); {
	case errors.Is(err, lake.ErrExists):
		return false, nil
	case err != nil:
		return false, lake.MapErr(err, fmt.Sprintf("table %s: drop unwritten", t))
	}
	if p.meta != nil {
		if ok, err := p.meta.dropTable(ctx, t); !ok && err != nil {
			return false, err
		}
	}
	schema0 := dir + "/schema/schema-0"
	names, err := p.fs.List(ctx, dir)
	if err != nil {
		return false, lake.MapErr(err, fmt.Sprintf("table %s: drop unwritten", t))
	}
	for _, n := range names {
		if n == "schema" || n == "snapshot" {
			continue
		}
		if err := p.fs.RemoveAll(ctx, dir+"/"+n); err != nil {
			return false, lake.MapErr(err, fmt.Sprintf("table %s: drop unwritten", t))
		}
	}
	for _, sub := range []string{"schema", "snapshot"} {
		names, err := p.fs.List(ctx, dir+"/"+sub)
		if err != nil {
			return false, lake.MapErr(err, fmt.Sprintf("table %s: drop unwritten", t))
		}
		for _, n := range names {
			if f := dir + "/" + sub + "/" + n; f != schema0 && f != mark {
				if err := p.fs.Remove(ctx, f); err != nil {
					return false, lake.MapErr(err, fmt.Sprintf("table %s: drop unwritten", t))
				}
			}
		}
	}
	for _, f := range []string{schema0, dir + "/schema", mark, dir + "/snapshot", dir} {
		// A directory that is not empty holds a newer create's files.
		if err := p.fs.Remove(ctx, f); err != nil {
			p.log.Debug("drop unwritten: left", "table", t.String(), "path", f, "err", err)
			break
		}
	}
	return true, nil
}
