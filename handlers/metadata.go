package handlers

import (
	"context"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
)

// TableTypeTable is the only table type flightgw reports.
const TableTypeTable = "TABLE"

// GetFlightInfoCatalogs answers CommandGetCatalogs.
func (h *Handler) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.Catalogs, h.Alloc), nil
}

// DoGetCatalogs lists the caller's catalogs.
func (h *Handler) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	cats, err := h.visibleCatalogs(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]map[string]any, len(cats))
	for i, c := range cats {
		rows[i] = map[string]any{"catalog_name": c.Name}
	}
	return rowsResult(h.Alloc, schema_ref.Catalogs, rows)
}

// GetFlightInfoSchemas answers CommandGetDbSchemas.
func (h *Handler) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.DBSchemas, h.Alloc), nil
}

// scopeCatalogs returns the catalogs a metadata request names: one, or all
// of the caller's when the request leaves the catalog out.
func (h *Handler) scopeCatalogs(ctx context.Context, name *string) ([]Catalog, error) {
	if name != nil {
		c, _, err := h.catalog(ctx, *name)
		if err != nil {
			if status.Code(err) == codes.NotFound {
				return nil, nil // an unknown catalog simply matches nothing
			}
			return nil, err
		}
		return []Catalog{c}, nil
	}
	return h.visibleCatalogs(ctx)
}

type namespaceRow struct {
	cat Catalog
	ns  []string
}

func (h *Handler) namespaces(ctx context.Context, catalog, pattern *string) ([]namespaceRow, error) {
	cats, err := h.scopeCatalogs(ctx, catalog)
	if err != nil {
		return nil, err
	}
	match, err := likePattern(pattern)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "db_schema_filter_pattern: %v", err)
	}
	var out []namespaceRow
	for _, c := range cats {
		l, ok := c.Provider.(catalogs.Lister)
		if !ok {
			continue
		}
		nss, err := l.ListNamespaces(ctx)
		if err != nil {
			return nil, Status(err)
		}
		slices.SortFunc(nss, func(a, b []string) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
		for _, ns := range nss {
			if match(strings.Join(ns, ".")) {
				out = append(out, namespaceRow{c, ns})
			}
		}
	}
	return out, nil
}

// DoGetDBSchemas lists namespaces (a multi-level namespace is joined with
// dots).
func (h *Handler) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	nss, err := h.namespaces(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	rows := make([]map[string]any, len(nss))
	for i, n := range nss {
		rows[i] = map[string]any{"catalog_name": n.cat.Name, "db_schema_name": strings.Join(n.ns, ".")}
	}
	return rowsResult(h.Alloc, schema_ref.DBSchemas, rows)
}

// GetFlightInfoTables answers CommandGetTables.
func (h *Handler) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	return flightInfoFor(desc, schema, h.Alloc), nil
}

// DoGetTables lists tables, with their IPC-serialized Arrow schema when
// include_schema is set (how JDBC's getColumns works).
func (h *Handler) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if types := cmd.GetTableTypes(); len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, TableTypeTable) }) {
		return h.tablesResult(cmd.GetIncludeSchema(), nil)
	}
	nss, err := h.namespaces(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	match, err := likePattern(cmd.GetTableNameFilterPattern())
	if err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "table_name_filter_pattern: %v", err)
	}
	var rows []map[string]any
	for _, n := range nss {
		tables, err := n.cat.Provider.(catalogs.Lister).ListTables(ctx, n.ns)
		if err != nil {
			return nil, nil, Status(err)
		}
		slices.SortFunc(tables, func(a, b catalogs.TableIdent) int { return strings.Compare(a.Name, b.Name) })
		for _, t := range tables {
			if !match(t.Name) {
				continue
			}
			row := map[string]any{"catalog_name": n.cat.Name, "db_schema_name": strings.Join(n.ns, "."),
				"table_name": t.Name, "table_type": TableTypeTable}
			if cmd.GetIncludeSchema() {
				t.Catalog = n.cat.Name
				spec, err := n.cat.Provider.GetTableSpec(ctx, t)
				if err != nil {
					return nil, nil, Status(err)
				}
				row["table_schema"] = flight.SerializeSchema(spec.Schema, h.Alloc)
			}
			rows = append(rows, row)
		}
	}
	return h.tablesResult(cmd.GetIncludeSchema(), rows)
}

func (h *Handler) tablesResult(includeSchema bool, rows []map[string]any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if includeSchema {
		return rowsResult(h.Alloc, schema_ref.TablesWithIncludedSchema, rows)
	}
	return rowsResult(h.Alloc, schema_ref.Tables, rows)
}

// GetFlightInfoTableTypes answers CommandGetTableTypes.
func (h *Handler) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.TableTypes, h.Alloc), nil
}

// DoGetTableTypes lists the table types: TABLE.
func (h *Handler) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return rowsResult(h.Alloc, schema_ref.TableTypes, []map[string]any{{"table_type": TableTypeTable}})
}

// GetFlightInfoPrimaryKeys answers CommandGetPrimaryKeys.
func (h *Handler) GetFlightInfoPrimaryKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.PrimaryKeys, h.Alloc), nil
}

// DoGetPrimaryKeys returns no rows: table formats declare no primary keys.
func (h *Handler) DoGetPrimaryKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return rowsResult(h.Alloc, schema_ref.PrimaryKeys, nil)
}

// GetFlightInfoImportedKeys answers CommandGetImportedKeys.
func (h *Handler) GetFlightInfoImportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.ImportedKeys, h.Alloc), nil
}

// DoGetImportedKeys returns no rows: there are no foreign keys.
func (h *Handler) DoGetImportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return rowsResult(h.Alloc, schema_ref.ImportedKeys, nil)
}

// GetFlightInfoExportedKeys answers CommandGetExportedKeys.
func (h *Handler) GetFlightInfoExportedKeys(_ context.Context, _ flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.ExportedKeys, h.Alloc), nil
}

// DoGetExportedKeys returns no rows: there are no foreign keys.
func (h *Handler) DoGetExportedKeys(context.Context, flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return rowsResult(h.Alloc, schema_ref.ExportedKeys, nil)
}

// GetFlightInfoCrossReference answers CommandGetCrossReference.
func (h *Handler) GetFlightInfoCrossReference(_ context.Context, _ flightsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.CrossReference, h.Alloc), nil
}

// DoGetCrossReference returns no rows: there are no foreign keys.
func (h *Handler) DoGetCrossReference(context.Context, flightsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return rowsResult(h.Alloc, schema_ref.CrossReference, nil)
}
