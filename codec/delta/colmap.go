package delta

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/uuid"
)

// Table properties of column mapping (PROTOCOL.md "Column Mapping").
const (
	PropColumnMappingMode  = "delta.columnMapping.mode"
	PropColumnMappingMaxID = "delta.columnMapping.maxColumnId"
)

// ColumnMappingMode is the table's delta.columnMapping.mode: "none" when unset.
func (m *Metadata) ColumnMappingMode() string {
	if v := m.Configuration[PropColumnMappingMode]; v != "" {
		return v
	}
	return "none"
}

// AssignColumnMapping gives every field of s, nested ones included (struct fields inside
// arrays and maps too), the next id from 1 and a physical name col-<uuid>, as a writer must
// when it creates a table with column mapping: data files then hold the physical names and
// the ids as Parquet field ids. It returns the largest id, the table's
// delta.columnMapping.maxColumnId.
func AssignColumnMapping(s *StructType) int32 {
	var id int32
	assignFields(s, &id)
	return id
}

func assignFields(s *StructType, id *int32) {
	for _, f := range s.Fields {
		*id++
		if f.Metadata == nil {
			f.Metadata = map[string]json.RawMessage{}
		}
		f.Metadata[MetaColumnMappingID] = json.RawMessage(strconv.Itoa(int(*id)))
		name, _ := json.Marshal("col-" + uuid.NewString())
		f.Metadata[MetaColumnMappingPhysicalName] = name
		assignType(f.Type, id)
	}
}

func assignType(t DataType, id *int32) {
	switch t := t.(type) {
	case *StructType:
		assignFields(t, id)
	case *ArrayType:
		assignType(t.ElementType, id)
	case *MapType:
		assignType(t.KeyType, id)
		assignType(t.ValueType, id)
	}
}

// CheckColumnMapping checks that a schema can be written under mode (name or id): every
// field, nested ones included, has the physical name (and, in id mode, the id) that data
// files must carry, and no two fields share one. A mode this package does not know is an
// error too.
func CheckColumnMapping(s *StructType, mode string) error {
	switch mode {
	case "none", "":
		return nil
	case "name", "id":
	default:
		return fmt.Errorf("column mapping mode %q is not one of none, name, id", mode)
	}
	names, ids := map[string]bool{}, map[int32]bool{}
	var walk func(s *StructType, path string) error
	var walkType func(t DataType, path string) error
	walk = func(s *StructType, path string) error {
		for _, f := range s.Fields {
			p := path + f.Name
			if _, ok := f.Metadata[MetaColumnMappingPhysicalName]; !ok {
				return fmt.Errorf("column %q has no %s", p, MetaColumnMappingPhysicalName)
			}
			phys, err := f.PhysicalName()
			if err != nil {
				return err
			}
			if names[phys] {
				return fmt.Errorf("column %q: physical name %q is another column's too", p, phys)
			}
			names[phys] = true
			id, ok, err := f.ColumnMappingID()
			if err != nil {
				return err
			}
			if ok && ids[id] {
				return fmt.Errorf("column %q: column mapping id %d is another column's too", p, id)
			}
			ids[id] = ok
			if !ok && mode == "id" {
				return fmt.Errorf("column %q has no %s", p, MetaColumnMappingID)
			}
			if err := walkType(f.Type, p+"."); err != nil {
				return err
			}
		}
		return nil
	}
	walkType = func(t DataType, path string) error {
		switch t := t.(type) {
		case *StructType:
			return walk(t, path)
		case *ArrayType:
			return walkType(t.ElementType, path+"element.")
		case *MapType:
			if err := walkType(t.KeyType, path+"key."); err != nil {
				return err
			}
			return walkType(t.ValueType, path+"value.")
		}
		return nil
	}
	return walk(s, "")
}
