package paimon

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
)

// SetReclaimBeforeRecheck runs fn between a reclaim's listing and its
// second read of the snapshots, and returns the undo.
func SetReclaimBeforeRecheck(fn func(catalogs.TableIdent)) func() {
	reclaimBeforeRecheck = fn
	return func() { reclaimBeforeRecheck = nil }
}

// ReceiptFiles are the files a receipt staged, relative to the table
// directory.
func ReceiptFiles(t catalogs.TableIdent, rs []catalogs.WriteReceipt) []string {
	_, metas, err := decodeReceipts(t, rs)
	if err != nil {
		panic(err)
	}
	var out []string
	for _, m := range metas {
		out = append(out, m.Files...)
	}
	return out
}

// Reachable lists, relative to the table directory, what every snapshot
// file and tag of the table reaches, read here on its own and not with
// the reclaimer's walk: manifest lists, manifests, data files.
func Reachable(ctx context.Context, p *Provider, t catalogs.TableIdent) ([]string, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range []string{"snapshot", "tag"} {
		names, err := p.fs.List(ctx, st.dir+"/"+d)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !strings.HasPrefix(n, d+"-") {
				continue
			}
			b, err := p.fs.Read(ctx, st.dir+"/"+d+"/"+n)
			if err != nil {
				return nil, err
			}
			var s snapshot
			if err := json.Unmarshal(b, &s); err != nil {
				return nil, err
			}
			for _, l := range []string{s.BaseManifestList, s.DeltaManifestList} {
				out = append(out, "manifest/"+l)
				ms, err := p.readManifestList(ctx, t, st.dir, l)
				if err != nil {
					return nil, err
				}
				for _, m := range ms {
					out = append(out, "manifest/"+m.FileName)
					es, err := p.readManifest(ctx, t, st.dir, m.FileName)
					if err != nil {
						return nil, err
					}
					for _, e := range es {
						out = append(out, st.partitionDir(e)+"bucket-"+strconv.Itoa(int(e.bucket))+"/"+e.file.FileName)
					}
				}
			}
		}
	}
	return out, nil
}
