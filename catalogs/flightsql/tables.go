package flightsql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/flightgw/flightgw/catalogs"
)

// schemaOf is the upstream schema a table's namespace names (one level).
// It is the one gate of every access to the upstream by table.
func (p *Provider) schemaOf(t catalogs.TableIdent) (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	if t.Catalog != p.name {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s is not in catalog %q", t, p.name)
	}
	if len(t.Namespace) != 1 {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a flightsql namespace has one level (the upstream schema), not %d", t, len(t.Namespace))
	}
	if p.cfg.namespace != "" {
		if t.Namespace[0] != p.cfg.namespace {
			return "", catalogs.Errorf(catalogs.ErrNotFound, "table %s: catalog %q has one namespace, %s (property %s)", t, p.name, p.cfg.namespace, propNamespace)
		}
		return "", nil
	}
	return t.Namespace[0], nil
}

// quoteIdent quotes an identifier with the upstream's quote character.
func quoteIdent(q, s string) string { return q + strings.ReplaceAll(s, q, q+q) + q }

// upstreamName is the table as the upstream's SQL writes it: its catalog
// (when configured), schema and name, each quoted.
func (p *Provider) upstreamName(ctx context.Context, t catalogs.TableIdent) (string, error) {
	schema, err := p.schemaOf(t)
	if err != nil {
		return "", err
	}
	c, err := p.capabilities(ctx)
	if err != nil {
		return "", err
	}
	name := quoteIdent(c.quote, t.Name)
	if schema != "" {
		name = quoteIdent(c.quote, schema) + "." + name
	}
	if p.cfg.catalog != "" {
		name = quoteIdent(c.quote, p.cfg.catalog) + "." + name
	}
	return name, nil
}

func (p *Provider) catalogOpt() *string {
	if p.cfg.catalog == "" {
		return nil
	}
	c := p.cfg.catalog
	return &c
}

// ListNamespaces implements catalogs.Lister: the upstream's schemas (of
// the configured upstream catalog).
func (p *Provider) ListNamespaces(ctx context.Context) ([][]string, error) {
	if p.cfg.namespace != "" {
		return [][]string{{p.cfg.namespace}}, nil
	}
	r, err := p.query(ctx, "list schemas", func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.GetDBSchemas(ctx, &fsql.GetDBSchemasOpts{Catalog: p.catalogOpt()})
	})
	if err != nil {
		return nil, err
	}
	defer r.Release()
	seen := map[string]bool{}
	var out [][]string
	for r.Next() {
		rec := r.RecordBatch()
		cats, _ := rec.Column(0).(*array.String)
		names, ok := rec.Column(1).(*array.String)
		if !ok {
			return nil, p.badAnswer("GetDbSchemas", rec.Schema())
		}
		for i := range names.Len() {
			if !p.inCatalog(cats, i) || seen[names.Value(i)] || catalogs.ValidateNamespace([]string{names.Value(i)}) != nil {
				continue
			}
			seen[names.Value(i)] = true
			out = append(out, []string{names.Value(i)})
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out, nil
}

// inCatalog reports whether row i of a catalog_name column is the
// configured upstream catalog (any, when none is configured).
func (p *Provider) inCatalog(cats *array.String, i int) bool {
	if p.cfg.catalog == "" {
		return true
	}
	return cats != nil && cats.IsValid(i) && cats.Value(i) == p.cfg.catalog
}

func (p *Provider) badAnswer(what string, s *arrow.Schema) error {
	return catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: %s answered with schema %s", p.name, p.cfg.addr, what, s)
}

// upstreamTable is one row of the upstream's GetTables.
type upstreamTable struct {
	schema, name string
	arrow        *arrow.Schema // nil: not sent
}

// getTables lists the tables of one upstream schema, named exactly, with
// their Arrow schemas when withSchema and the upstream sends them. The
// patterns sent are the names themselves, which match a superset (their
// _ and % are wildcards); rows are then matched exactly.
func (p *Provider) getTables(ctx context.Context, schema, table string, withSchema bool) ([]upstreamTable, error) {
	opts := &fsql.GetTablesOpts{Catalog: p.catalogOpt(), IncludeSchema: withSchema}
	if schema != "" {
		opts.DbSchemaFilterPattern = &schema
	}
	if table != "" {
		opts.TableNameFilterPattern = &table
	}
	r, err := p.query(ctx, "list tables of schema "+schema, func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.GetTables(ctx, opts)
	})
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var out []upstreamTable
	for r.Next() {
		rec := r.RecordBatch()
		cats, _ := rec.Column(0).(*array.String)
		schemas, ok1 := rec.Column(1).(*array.String)
		names, ok2 := rec.Column(2).(*array.String)
		if !ok1 || !ok2 {
			return nil, p.badAnswer("GetTables", rec.Schema())
		}
		var blobs *array.Binary
		if withSchema && rec.NumCols() > 4 {
			blobs, _ = rec.Column(4).(*array.Binary)
		}
		for i := range names.Len() {
			if !p.inCatalog(cats, i) || (schemas.IsValid(i) && schemas.Value(i) != schema) || (table != "" && names.Value(i) != table) {
				continue
			}
			ut := upstreamTable{schema: schemas.Value(i), name: names.Value(i)}
			if blobs != nil && blobs.IsValid(i) && len(blobs.Value(i)) > 0 {
				if ut.arrow, err = flight.DeserializeSchema(blobs.Value(i), nil); err != nil {
					return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q: upstream %s: the schema of table %s.%s does not decode: %v", p.name, p.cfg.addr, ut.schema, ut.name, err)
				}
			}
			out = append(out, ut)
		}
	}
	return out, r.Err()
}

// ListTables implements catalogs.Lister.
func (p *Provider) ListTables(ctx context.Context, ns []string) ([]catalogs.TableIdent, error) {
	schema, err := p.schemaOf(catalogs.TableIdent{Catalog: p.name, Namespace: ns, Name: "x"})
	if err != nil {
		return nil, err
	}
	ts, err := p.getTables(ctx, schema, "", false)
	if err != nil {
		return nil, err
	}
	out := make([]catalogs.TableIdent, 0, len(ts))
	for _, ut := range ts {
		if catalogs.ValidateName("table", ut.name) != nil {
			continue // a name the gateway cannot carry is not listed
		}
		out = append(out, catalogs.TableIdent{Catalog: p.name, Namespace: slices.Clone(ns), Name: ut.name})
	}
	slices.SortFunc(out, func(a, b catalogs.TableIdent) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// GetTableSpec implements catalogs.Provider: the table's Arrow schema
// from the upstream's GetTables, or, when the upstream sends no schemas,
// from the FlightInfo of a query that reads no row. The types are
// normalized (normalize): results are cast back to them.
//
// A spec is kept for schema_ttl: a query looks its tables up several
// times (resolution, security context, planning, the scan), and each
// look-up would be a GetTables round trip.
func (p *Provider) GetTableSpec(ctx context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	key := t.String()
	p.specMu.Lock()
	c, ok := p.specs[key]
	p.specMu.Unlock()
	if ok && time.Since(c.at) < p.cfg.schemaTTL {
		return c.spec, nil
	}
	spec, err := p.readTableSpec(ctx, t)
	if err != nil {
		return spec, err
	}
	if p.cfg.schemaTTL > 0 {
		p.specMu.Lock()
		if len(p.specs) >= maxSpecs {
			clear(p.specs)
		}
		p.specs[key] = cachedSpec{spec: spec, at: time.Now()}
		p.specMu.Unlock()
	}
	return spec, nil
}

// maxSpecs bounds the kept specs (a client listing many tables).
const maxSpecs = 4096

// cachedSpec is a table's spec and when it was read.
type cachedSpec struct {
	spec catalogs.TableSpec
	at   time.Time
}

// forgetSpec drops a table's kept spec (after this catalog created or
// dropped it).
func (p *Provider) forgetSpec(t catalogs.TableIdent) {
	p.specMu.Lock()
	defer p.specMu.Unlock()
	delete(p.specs, t.String())
}

// readTableSpec is GetTableSpec from the upstream.
func (p *Provider) readTableSpec(ctx context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	schema, err := p.schemaOf(t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	ts, err := p.getTables(ctx, schema, t.Name, !p.probeOnly.Load())
	if errors.Is(err, errUnimplemented) {
		// No GetTables (Sail): the probe says whether the table exists.
		ts, err = []upstreamTable{{schema: schema, name: t.Name}}, nil
	}
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	if len(ts) == 0 {
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", t)
	}
	as := ts[0].arrow
	if as == nil {
		if p.probeOnly.CompareAndSwap(false, true) {
			p.log.Info("upstream GetTables sends no table schemas: tables are probed with a query")
		}
		if as, err = p.probe(ctx, t); err != nil {
			return catalogs.TableSpec{}, err
		}
	}
	c, _ := p.cachedCaps()
	spec := catalogs.TableSpec{Schema: normalizeSchema(as), Properties: map[string]string{"flightsql.upstream": c.label(p.cfg.addr)}}
	for _, f := range spec.Schema.Fields() {
		spec.SchemaSpec.Fields = append(spec.SchemaSpec.Fields, catalogs.FieldMetadata{Name: f.Name, DataType: f.Type, Nullable: f.Nullable})
	}
	return spec, nil
}

// probe reads a table's schema from a query that returns no row.
func (p *Provider) probe(ctx context.Context, t catalogs.TableIdent) (*arrow.Schema, error) {
	name, err := p.upstreamName(ctx, t)
	if err != nil {
		return nil, err
	}
	r, err := p.query(ctx, fmt.Sprintf("probe the schema of table %s", t), func(ctx context.Context) (*flight.FlightInfo, error) {
		return p.main.client.Execute(ctx, "SELECT * FROM "+name+" WHERE 1=0")
	})
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return r.Schema(), nil
}
