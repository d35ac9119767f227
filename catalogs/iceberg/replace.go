package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// A replace (ingest mode replace) keeps the table: its UUID, its snapshot
// history and its older metadata. When the upload's columns, after the
// type conversions CreateTable applies (storedType), are the table's
// current schema, the replace is an ordinary stream whose receipts
// CommitOverwrite lands as one overwrite snapshot. When they differ, the
// stream writes its files under a new schema and its receipts carry that
// schema; CommitOverwrite then sets it as the current schema, removes
// every current data file and adds the receipts' files in one catalog
// commit.
//
// Field ids of the new schema: a column that keeps its name and a
// compatible type (the same type, or a promotion Iceberg allows: int to
// long, float to double, a wider decimal) keeps its id, nested fields
// likewise; every other column gets a fresh id above the table's
// last-column-id, so that no id ever names two different columns over the
// table's history. A column that is optional in the table stays optional
// when the upload declares it non-nullable (a replace never tightens a
// column), and a column comment the upload does not set is kept.
//
// The partition spec is kept. A replace that drops (or changes
// incompatibly) a column the current partition spec uses, or that would
// change a partition field's type, is refused with an ErrInvalidArgument
// naming the partition field: changing how a table is partitioned is not
// something an upload decides.

// replaceFormat names the receipt layout of a replace with a new schema:
// receiptFormat's fields plus "replace". A gateway that only knows
// receiptFormat refuses these receipts instead of committing their files
// under the old schema.
const replaceFormat = "flightgw.iceberg.data-files/v2"

// replaceMeta is the "replace" object of a replaceFormat receipt.
type replaceMeta struct {
	// Schema is the new schema (Iceberg JSON) the files were written
	// under, with its field ids.
	Schema json.RawMessage `json:"schema"`
	// BaseSchemaID and BaseLastColumnID are the table's current schema id
	// and last-column-id the new schema was derived from.
	BaseSchemaID     int `json:"base_schema_id"`
	BaseLastColumnID int `json:"base_last_column_id"`
}

// replacement is a replace stream's new schema and what it was derived from.
type replacement struct {
	schema           *ice.Schema
	baseSchemaID     int
	baseLastColumnID int
}

// OpenReplaceStream opens a write stream for a replace of table t's data
// with an upload of the given schema (catalogs.SchemaReplacer). See the
// comment at the top of this file for how the schema is decided.
func (p *Provider) OpenReplaceStream(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema) (catalogs.WriteStream, error) {
	if p.storage.State() == catalogs.BreakerOpen {
		return nil, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: object storage unavailable (circuit open)", t)
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	want, err := icebergSchema(schema, meta.Version())
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t, err)
	}
	cur := meta.CurrentSchema()
	var sc *ice.Schema
	err = protect(catalogs.ErrInvalidArgument, fmt.Sprintf("table %s: assign field ids", t), func() error {
		sc = assignIDs(want, cur, meta.LastColumnID())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sc.Equals(cur) {
		return p.openStream(ctx, t, tbl, nil)
	}
	rep := &replacement{schema: sc, baseSchemaID: cur.ID, baseLastColumnID: meta.LastColumnID()}
	change, err := planSchema(t, tbl, rep)
	if err != nil {
		return nil, err
	}
	// The writer sees the table as it will be after the commit: the new
	// schema current, the partition spec bound to it.
	return p.openStream(ctx, t, table.New(tbl.Identifier(), change.meta, tbl.MetadataLocation(), tbl.FS, nil), rep)
}

// schemaChange is what a commit of replace receipts adds to its snapshot.
type schemaChange struct {
	// meta is the table's metadata with the new schema current: the base
	// the snapshot is built on.
	meta table.Metadata
	// updates make the new schema current (add-schema unless the table
	// already has an equal schema, then set-current-schema); they precede
	// the snapshot's updates in the same catalog commit.
	updates []table.Update
	// reqs assert the schema the replace was derived from.
	reqs []table.Requirement
	// create is set for a staged create (stagedcreate.go): reqs (just
	// AssertCreate) replace the transaction's own, which assert the table
	// it was built on, one that does not exist yet.
	create bool
}

// planSchema checks rep against the table's partition spec and builds the
// metadata and updates that make rep.schema current.
func planSchema(t catalogs.TableIdent, tbl *table.Table, rep *replacement) (*schemaChange, error) {
	meta := tbl.Metadata()
	if err := checkSpec(t, meta, rep.schema); err != nil {
		return nil, err
	}
	id := 0
	for _, s := range meta.Schemas() {
		id = max(id, s.ID+1)
	}
	existing := -1
	for _, s := range meta.Schemas() {
		if s.Equals(rep.schema) {
			existing = s.ID
			break
		}
	}
	var change *schemaChange
	err := protect(catalogs.ErrInvalidArgument, fmt.Sprintf("table %s: new schema", t), func() error {
		b, err := table.MetadataBuilderFromBase(meta, tbl.MetadataLocation())
		if err != nil {
			return err
		}
		var ups []table.Update
		if existing >= 0 {
			ups = []table.Update{table.NewSetCurrentSchemaUpdate(existing)}
			err = b.SetCurrentSchemaID(existing)
		} else {
			// The builder numbers the schema as the catalog will (an equal
			// schema's id, else one above the highest); each gets its own
			// copy since the builder sets the id it assigns.
			ups = []table.Update{table.NewAddSchemaUpdate(withSchemaID(rep.schema, id)), table.NewSetCurrentSchemaUpdate(-1)}
			if err = b.AddSchema(withSchemaID(rep.schema, id)); err == nil {
				err = b.SetCurrentSchemaID(-1)
			}
		}
		if err != nil {
			return err
		}
		m, err := b.Build()
		if err != nil {
			return err
		}
		change = &schemaChange{meta: m, updates: ups, reqs: []table.Requirement{
			table.AssertCurrentSchemaID(rep.baseSchemaID), table.AssertLastAssignedFieldID(rep.baseLastColumnID),
		}}
		return nil
	})
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s: new schema", t))
	}
	return change, nil
}

// schemaChangeFor returns the schema change the receipts ask for, nil when
// they are ordinary receipts or the table already has their schema. It
// fails with ErrConflict naming the table when the table's schema changed
// since the replace began, and ErrInvalidArgument when the receipts mix
// schemas, are not an overwrite, or claim field ids the table's schema
// does not back.
func schemaChangeFor(t catalogs.TableIdent, tbl *table.Table, rms []receiptMeta, overwrite bool) (*schemaChange, error) {
	var rep *replacement
	plain := false
	for _, rm := range rms {
		if rm.schema == nil {
			plain = true
			continue
		}
		r := &replacement{schema: rm.schema, baseSchemaID: rm.Replace.BaseSchemaID, baseLastColumnID: rm.Replace.BaseLastColumnID}
		if rep != nil && (!rep.schema.Equals(r.schema) || rep.baseSchemaID != r.baseSchemaID || rep.baseLastColumnID != r.baseLastColumnID) {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipts replace the schema with different schemas", t)
		}
		rep = r
	}
	if rep == nil {
		return nil, nil
	}
	if plain {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipts of a replace with a new schema cannot be committed with receipts written under the old one", t)
	}
	if !overwrite {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipts of a replace with a new schema can only be committed as an overwrite", t)
	}
	meta := tbl.Metadata()
	var base *ice.Schema
	for _, s := range meta.Schemas() {
		if s.ID == rep.baseSchemaID {
			base = s
		}
	}
	if base == nil || rep.baseLastColumnID < base.HighestFieldID() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt names base schema %d the table does not have", t, rep.baseSchemaID)
	}
	if err := checkIDs(t, base, rep); err != nil {
		return nil, err
	}
	cur := meta.CurrentSchema()
	if cur.Equals(rep.schema) {
		return nil, nil // an identical replace landed meanwhile: overwrite only
	}
	if cur.ID != rep.baseSchemaID || meta.LastColumnID() != rep.baseLastColumnID {
		return nil, catalogs.Errorf(catalogs.ErrConflict,
			"table %s: its schema changed while the replace was written (schema %d, now %d; last column id %d, now %d): run the replace again",
			t, rep.baseSchemaID, cur.ID, rep.baseLastColumnID, meta.LastColumnID())
	}
	return planSchema(t, tbl, rep)
}

// checkIDs verifies a receipt's schema (client data in distributed writes)
// against the schema it claims to derive from: ids are unique, an id the
// base had names the same column with a compatible type, and every other
// id is above the base's last-column-id.
func checkIDs(t catalogs.TableIdent, base *ice.Schema, rep *replacement) error {
	seen := map[int]bool{}
	var walk func(path string, fields []ice.NestedField) error
	walk = func(path string, fields []ice.NestedField) error {
		for _, f := range fields {
			name := path + f.Name
			if seen[f.ID] || f.ID <= 0 {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt schema: field %q has a repeated or invalid id %d", t, name, f.ID)
			}
			seen[f.ID] = true
			if f.ID <= rep.baseLastColumnID {
				old, ok := base.FindFieldByID(f.ID)
				if !ok || old.Name != f.Name || !compatible(f.Type, old.Type) {
					return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt schema: field %q reuses id %d of another column", t, name, f.ID)
				}
			}
			if err := walk(name+".", children(f.Type)); err != nil {
				return err
			}
		}
		return nil
	}
	return walk("", rep.schema.Fields())
}

// children lists the fields nested in t.
func children(t ice.Type) []ice.NestedField {
	switch t := t.(type) {
	case *ice.StructType:
		return t.FieldList
	case *ice.ListType:
		return []ice.NestedField{t.ElementField()}
	case *ice.MapType:
		return []ice.NestedField{t.KeyField(), t.ValueField()}
	}
	return nil
}

// checkSpec refuses a schema the table's current partition spec cannot
// keep partitioning by.
func checkSpec(t catalogs.TableIdent, meta table.Metadata, sc *ice.Schema) error {
	cur := meta.CurrentSchema()
	spec := meta.PartitionSpec()
	for _, pf := range spec.Fields() {
		if _, void := pf.Transform.(ice.VoidTransform); void {
			continue
		}
		for _, id := range pf.SourceIDs {
			col, _ := cur.FindColumnName(id)
			nf, ok := sc.FindFieldByID(id)
			if !ok {
				return catalogs.Errorf(catalogs.ErrInvalidArgument,
					"table %s: partition field %q uses column %q, which the replace drops or changes incompatibly (a replace keeps the partition spec)", t, pf.Name, col)
			}
			of, _ := cur.FindFieldByID(id)
			if !pf.Transform.CanTransform(nf.Type) || (of.Type != nil && !pf.Transform.ResultType(nf.Type).Equals(pf.Transform.ResultType(of.Type))) {
				return catalogs.Errorf(catalogs.ErrInvalidArgument,
					"table %s: partition field %q cannot keep partitioning column %q as %s (a replace keeps the partition spec)", t, pf.Name, col, nf.Type)
			}
		}
	}
	return nil
}

// withSchemaID returns a copy of sc numbered id.
func withSchemaID(sc *ice.Schema, id int) *ice.Schema {
	return ice.NewSchemaWithIdentifiers(id, slices.Clone(sc.IdentifierFieldIDs), sc.Fields()...)
}

// assignIDs numbers want (a schema fresh from icebergSchema) against cur,
// the table's current schema, as the comment at the top of this file says.
func assignIDs(want, cur *ice.Schema, lastColumnID int) *ice.Schema {
	next := lastColumnID
	fresh := func() int { next++; return next }
	fields := matchFields(want.Fields(), cur.Fields(), fresh)
	out := ice.NewSchema(0, fields...)
	var idents []int
	for _, id := range cur.IdentifierFieldIDs {
		if f, ok := out.FindFieldByID(id); ok && f.Required {
			idents = append(idents, id)
		}
	}
	if len(idents) == 0 {
		return out
	}
	return ice.NewSchemaWithIdentifiers(0, idents, fields...)
}

// matchFields numbers want's fields: those matching a field of have by
// name with a compatible type take its id, the others fresh ones.
func matchFields(want, have []ice.NestedField, fresh func() int) []ice.NestedField {
	byName := make(map[string]ice.NestedField, len(have))
	for _, f := range have {
		byName[f.Name] = f
	}
	out := make([]ice.NestedField, len(want))
	for i, f := range want {
		old, ok := byName[f.Name]
		if ok && compatible(f.Type, old.Type) {
			f.ID = old.ID
			f.Type = matchType(f.Type, old.Type, fresh)
			f.Required = f.Required && old.Required
			if f.Doc == "" {
				f.Doc = old.Doc
			}
			if f.Type.Equals(old.Type) {
				f.InitialDefault, f.WriteDefault = old.InitialDefault, old.WriteDefault
			}
		} else {
			f.ID = fresh()
			f.Type = matchType(f.Type, nil, fresh)
		}
		out[i] = f
	}
	return out
}

// matchType numbers the fields nested in t against old (nil: all fresh).
func matchType(t, old ice.Type, fresh func() int) ice.Type {
	switch t := t.(type) {
	case *ice.StructType:
		return &ice.StructType{FieldList: matchFields(t.FieldList, children(old), fresh)}
	case *ice.ListType:
		var have []ice.NestedField
		if _, ok := old.(*ice.ListType); ok {
			have = children(old)
		}
		e := matchFields([]ice.NestedField{t.ElementField()}, have, fresh)[0]
		return &ice.ListType{ElementID: e.ID, Element: e.Type, ElementRequired: e.Required}
	case *ice.MapType:
		var have []ice.NestedField
		if _, ok := old.(*ice.MapType); ok {
			have = children(old)
		}
		kv := matchFields([]ice.NestedField{t.KeyField(), t.ValueField()}, have, fresh)
		return &ice.MapType{KeyID: kv[0].ID, KeyType: kv[0].Type, ValueID: kv[1].ID, ValueType: kv[1].Type, ValueRequired: kv[1].Required}
	}
	return t
}

// compatible reports whether a column of type old may keep its field id
// as type t: the same type, a promotion Iceberg allows, or nested types of
// the same kind (their fields are matched one by one).
func compatible(t, old ice.Type) bool {
	switch t := t.(type) {
	case *ice.StructType:
		_, ok := old.(*ice.StructType)
		return ok
	case *ice.ListType:
		_, ok := old.(*ice.ListType)
		return ok
	case *ice.MapType:
		_, ok := old.(*ice.MapType)
		return ok
	case ice.Int64Type:
		_, ok := old.(ice.Int32Type)
		return ok || t.Equals(old)
	case ice.Float64Type:
		_, ok := old.(ice.Float32Type)
		return ok || t.Equals(old)
	case ice.DecimalType:
		o, ok := old.(ice.DecimalType)
		return ok && o.Scale() == t.Scale() && o.Precision() <= t.Precision()
	}
	return old != nil && t.Equals(old)
}
