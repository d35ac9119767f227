package handlers

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
)

// Names resolve as GetSqlInfo declares identifiers, case-insensitively:
// a name in its exact case first (so a quoted name always finds its own
// table, whatever else exists), else the only name equal to it ignoring
// case. Two or more such names are refused, naming them, rather than
// picking one. Tools that upper-case unquoted names (sqlline, because the
// JDBC driver reports upper-case identifiers) find lower-case tables.

// matchName picks among names the one written: the exact one, else the
// only one equal ignoring case; ok is false when none is. Several equal
// ignoring case are an InvalidArgument error naming what and the
// candidates.
func matchName(what, written string, names []string) (string, bool, error) {
	var folded []string
	for _, n := range names {
		if n == written {
			return n, true, nil
		}
		if strings.EqualFold(n, written) {
			folded = append(folded, n)
		}
	}
	switch len(folded) {
	case 0:
		return "", false, nil
	case 1:
		return folded[0], true, nil
	}
	slices.Sort(folded)
	return "", false, catalogs.Errorf(catalogs.ErrInvalidArgument,
		"%s %s is ambiguous: it matches %s ignoring case (write the name in its exact case, quoted)",
		what, written, strings.Join(folded, ", "))
}

// findCatalog is the caller's catalog name resolves to; ok is false when
// there is none (a catalog of another realm does not exist for it).
func (h *Handler) findCatalog(p auth.Principal, name string) (Catalog, bool, error) {
	if c, ok := h.catalogs[name]; ok && c.Realm == p.Realm {
		return c, true, nil
	}
	var names []string
	for n, c := range h.catalogs {
		if c.Realm == p.Realm {
			names = append(names, n)
		}
	}
	n, ok, err := matchName("catalog", name, names)
	if !ok || err != nil {
		return Catalog{}, false, err
	}
	return h.catalogs[n], true, nil
}

// findTable loads the spec of the table schema.name of c, the schema and
// the name resolved as above (with a backend that can list them; another
// one is asked for the exact name only). A table that does not exist is
// ErrNotFound naming it as written.
func (h *Handler) findTable(ctx context.Context, c Catalog, schema, name, written string) (catalogs.TableIdent, catalogs.TableSpec, error) {
	ident := h.tableIdent(c.Name, schema, name)
	if err := ident.Validate(); err != nil {
		return ident, catalogs.TableSpec{}, err
	}
	spec, err := c.Provider.GetTableSpec(ctx, ident)
	if err == nil || !errors.Is(err, catalogs.ErrNotFound) {
		return ident, spec, err
	}
	notFound := catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", written)
	l, ok := c.Provider.(catalogs.Lister)
	if !ok {
		return ident, spec, notFound
	}
	nss, err := l.ListNamespaces(ctx)
	if err != nil {
		return ident, spec, err
	}
	joined := make([]string, len(nss))
	for i, ns := range nss {
		joined[i] = strings.Join(ns, ".")
	}
	ns, ok, err := matchName("schema", strings.Join(ident.Namespace, "."), joined)
	if err != nil {
		return ident, spec, err
	}
	if !ok {
		return ident, spec, notFound
	}
	ident.Namespace = strings.Split(ns, ".")
	tables, err := l.ListTables(ctx, ident.Namespace)
	if err != nil {
		return ident, spec, err
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	n, ok, err := matchName("table", ns+"."+name, qualify(ns, names))
	if err != nil {
		return ident, spec, err
	}
	if !ok {
		return ident, spec, notFound
	}
	ident.Name = n[len(ns)+1:]
	spec, err = c.Provider.GetTableSpec(ctx, ident)
	return ident, spec, err
}

// qualify prefixes each table name with its schema, so that an
// ambiguity names the tables in full.
func qualify(schema string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = schema + "." + n
	}
	return out
}
