package iceberg

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// Names are checked before they reach a location (catalogs.ValidateName);
// this file is the second line: whatever a table's location is (created
// here, by another engine sharing the catalog, or edited in the catalog
// database), no file is written or deleted unless it lies inside the
// table's location, and that location inside the warehouse, both read as
// the storage will read them.

// storeLoc is a location as the table's file IO resolves it: the store
// (scheme and authority) and the object's path in it.
type storeLoc struct {
	store string // "file://" or "s3://bucket"
	path  string // clean, slash separated, starting with "/"
}

func (l storeLoc) String() string { return l.store + l.path }

// contains reports whether o lies strictly inside l.
func (l storeLoc) contains(o storeLoc) bool {
	if l.store != o.store {
		return false
	}
	if l.path == "/" {
		return o.path != "/"
	}
	return strings.HasPrefix(o.path, l.path+"/")
}

// resolveLocation reads loc exactly as the table's IO does: a plain
// absolute path is a local path as it is; a file URI's path is taken by
// its characters, escapes included (literalFS, localfs.go, as Iceberg
// Java, pyiceberg and DuckDB read it); an object store key (s3://bucket/key
// and the like) is taken raw (io/gocloud/blobfs keeps keys opaque). The
// path must be clean, with no '.', '..' or empty segment, no NUL and no
// backslash, and so must a file URI's path once URL-unescaped (the
// decoding iceberg-go's LocalFS did, which literalFS falls back to for
// files written before): a path a storage could resolve elsewhere than
// it reads is refused, not resolved.
func resolveLocation(loc string) (storeLoc, error) {
	if strings.ContainsAny(loc, "\x00\\") {
		return storeLoc{}, fmt.Errorf("location %q holds a NUL or a backslash", loc)
	}
	var l storeLoc
	switch scheme, rest, hasScheme := strings.Cut(loc, "://"); {
	case strings.HasPrefix(loc, "/"):
		l = storeLoc{store: "file://", path: loc}
	case hasScheme && strings.EqualFold(scheme, "file"):
		u, err := url.Parse(loc)
		if err != nil {
			return storeLoc{}, fmt.Errorf("location %q is not a file url: %v", loc, err)
		}
		if (u.Host != "" && !strings.EqualFold(u.Host, "localhost")) || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
			return storeLoc{}, fmt.Errorf("location %q is not a plain local file url", loc)
		}
		if err := cleanPath(loc, u.Path); err != nil {
			return storeLoc{}, err
		}
		l = storeLoc{store: "file://", path: literalPath(loc)}
	case hasScheme && scheme != "":
		authority, key, _ := strings.Cut(rest, "/")
		if authority == "" || strings.ContainsAny(authority, "?#") {
			return storeLoc{}, fmt.Errorf("location %q names no bucket", loc)
		}
		scheme = strings.ToLower(scheme)
		if scheme == "s3a" || scheme == "s3n" {
			scheme = "s3" // one store, as iceberg-go's S3 IO takes them
		}
		l = storeLoc{store: scheme + "://" + authority, path: "/" + key}
	default:
		return storeLoc{}, fmt.Errorf("location %q is neither an absolute path nor a url", loc)
	}
	if err := cleanPath(loc, l.path); err != nil {
		return storeLoc{}, err
	}
	l.path = strings.TrimSuffix(l.path, "/")
	if l.path == "" {
		l.path = "/"
	}
	return l, nil
}

// cleanPath refuses p, the path location loc resolves to, unless it is
// absolute and clean, without NUL or backslash.
func cleanPath(loc, p string) error {
	if strings.ContainsAny(p, "\x00\\") {
		return fmt.Errorf("location %q decodes to %q, which holds a NUL or a backslash", loc, p)
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return fmt.Errorf("location %q decodes to %q, which is not a clean path ('.', '..' or empty segments)", loc, p)
	}
	return nil
}

// warehouseLoc is the resolved warehouse, ok false when none is configured
// (a REST catalog may leave it to the server).
func (p *Provider) warehouseLoc() (storeLoc, bool, error) {
	if p.cfg.warehouse == "" {
		return storeLoc{}, false, nil
	}
	w, err := resolveLocation(p.cfg.warehouse)
	if err != nil {
		return storeLoc{}, false, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: warehouse: %v", p.name, err)
	}
	return w, true, nil
}

// checkLocation proves that loc, the location of table t, lies inside the
// warehouse. A location outside it is ErrPermissionDenied: the gateway
// never writes or deletes there.
func (p *Provider) checkLocation(t catalogs.TableIdent, loc string) (storeLoc, error) {
	l, err := resolveLocation(loc)
	if err != nil {
		return storeLoc{}, catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: location refused: %v", t, err)
	}
	w, ok, err := p.warehouseLoc()
	if err != nil {
		return storeLoc{}, err
	}
	if ok && !w.contains(l) {
		return storeLoc{}, catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: location %s is outside the warehouse %s", t, l, w)
	}
	return l, nil
}

// checkTable proves a loaded table's location lies inside the warehouse,
// and the places its properties make it write data and metadata lie
// inside its location.
func (p *Provider) checkTable(t catalogs.TableIdent, tbl *table.Table) (storeLoc, error) {
	l, err := p.checkLocation(t, tbl.Location())
	if err != nil {
		return storeLoc{}, err
	}
	for _, key := range []string{table.WriteDataPathKey, table.WriteMetadataPathKey} {
		if v := tbl.Properties()[key]; v != "" {
			if err := checkFile(t, l, v); err != nil {
				return storeLoc{}, catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: property %s: %w", t, key, err)
			}
		}
	}
	return l, nil
}

// checkFile proves file lies inside the table location l; it is
// ErrInvalidArgument otherwise (the path comes from a receipt or a
// writer, never from the table's own rules).
func checkFile(t catalogs.TableIdent, l storeLoc, file string) error {
	f, err := resolveLocation(file)
	if err != nil {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: file refused: %v", t, err)
	}
	if !l.contains(f) {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: file %s is outside the table's location %s", t, f, l)
	}
	// A partition value too long for a directory name (iceberg-go's
	// partitioned writer would lose the storage's error and report a
	// short write).
	full, limit := len(f.path), catalogs.MaxLocalPathBytes
	if f.store != "file://" {
		full, limit = len(f.path)-1, catalogs.MaxObjectKeyBytes // the key has no leading '/'
	}
	return catalogs.CheckFilePath(t, strings.TrimPrefix(f.path, l.path+"/"), full, limit)
}

// newLocation is the location a SQL catalog gives a new table t, computed
// as iceberg-go computes it (the namespace's location property, else
// <warehouse>/<namespace>.db), so that it can be checked before anything
// is written there and then passed to CreateTable as it is.
func (p *Provider) newLocation(ctx context.Context, t catalogs.TableIdent) (string, error) {
	props, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (map[string]string, error) {
		return p.cat.LoadNamespaceProperties(ctx, t.Namespace)
	})
	if err != nil {
		return "", mapErr(err, fmt.Sprintf("table %s: create", t))
	}
	// Joined by characters, not by url.JoinPath: that escapes the base
	// ("a b" as "a%20b"), which the IO reads by its characters
	// (literalFS): a table of a warehouse "file:///x/a b" would lie
	// outside it. Names are of AllowedNameChars, which need no escaping.
	base := strings.TrimSuffix(p.cfg.warehouse, "/") + "/" + strings.Join(t.Namespace, ".") + ".db"
	if nsLoc := props["location"]; nsLoc != "" {
		base = strings.TrimSuffix(nsLoc, "/")
	}
	return base + "/" + t.Name, nil
}
