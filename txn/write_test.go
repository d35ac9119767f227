package txn

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestSameColumns(t *testing.T) {
	a := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	c := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	if !sameColumns(a, b) || sameColumns(a, c) || sameColumns(a, nil) {
		t.Fatal("sameColumns")
	}
}
