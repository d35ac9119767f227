package paimon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// TestLayoutOptionsRefused: the layout options a client passes when it
// creates a table (bucket, bucket-key, primary-key, partition) are refused
// InvalidArgument, naming the option and the column, when they name a
// missing column, a column twice or an empty one, a bucket count out of
// range, a bucket key in unaware bucket mode or on a partition column, or
// a primary key made of partition columns only: each a table Paimon Java
// refuses (or, for a blank around a name, one whose bucket-key Java would
// not find). Before, duplicates, empty names, bucket-key with bucket -1
// and bucket-key on a partition column created the table. Sound layouts
// are created, the bucket-key stored as Java splits it.
func TestLayoutOptionsRefused(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	refused := []struct {
		opts map[string]string
		want []string // substrings of the message
	}{
		{map[string]string{"bucket": "4097"}, []string{`"bucket"`, "4096"}},
		{map[string]string{"bucket": "0"}, []string{`"bucket"`}},
		{map[string]string{"bucket": "99999999999999999999"}, []string{`"bucket"`}},
		{map[string]string{"bucket": "2", "bucket-key": "nope"}, []string{`"bucket-key"`, `"nope"`}},
		{map[string]string{"bucket": "2", "bucket-key": "id,id"}, []string{`"bucket-key"`, `"id"`, "twice"}},
		{map[string]string{"bucket": "2", "bucket-key": ",id"}, []string{`"bucket-key"`, "empty"}},
		{map[string]string{"bucket": "2", "bucket-key": ""}, []string{`"bucket-key"`, "empty"}},
		{map[string]string{"bucket-key": "id"}, []string{`"bucket-key"`, "bucket -1"}},
		{map[string]string{"bucket": "-1", "bucket-key": "id"}, []string{`"bucket-key"`, "bucket -1"}},
		{map[string]string{"bucket": "2", "bucket-key": "p", "partition": "p"}, []string{`"bucket-key"`, `"p"`, "partition column"}},
		{map[string]string{"primary-key": "nope"}, []string{`"primary-key"`, `"nope"`}},
		{map[string]string{"primary-key": "id,id"}, []string{`"primary-key"`, `"id"`, "twice"}},
		{map[string]string{"primary-key": ""}, []string{`"primary-key"`, "empty"}},
		{map[string]string{"primary-key": "id", "bucket-key": "name", "bucket": "2"}, []string{"bucket-key", `"name"`}},
		{map[string]string{"primary-key": "id", "partition": "id"}, []string{`"primary-key"`, "only partition columns"}},
		{map[string]string{"partition": "nope"}, []string{`"partition"`, `"nope"`}},
		{map[string]string{"partition": "ID"}, []string{`"partition"`, `"ID"`}},
		{map[string]string{"partition": "p,p"}, []string{`"partition"`, `"p"`, "twice"}},
		{map[string]string{"partition": "p,,id"}, []string{`"partition"`, "empty"}},
		{map[string]string{"partition": "f"}, []string{`"f"`, "partition column"}},
		{map[string]string{"Bucket": "2"}, []string{`"Bucket"`, "cannot be set"}},
	}
	for i, c := range refused {
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: fmt.Sprintf("r%d", i)}
		_, err := p.CreateTable(ctx, id, schema, c.opts)
		if !errors.Is(err, catalogs.ErrInvalidArgument) {
			t.Errorf("%v: %v, want InvalidArgument", c.opts, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not name %s", c.opts, err, w)
			}
		}
	}
	accepted := []map[string]string{
		{"bucket": "4096", "bucket-key": " id , name "},
		{"primary-key": "p,id", "partition": "p", "bucket": "3"},
		{"partition": "p, id"},
		{"primary-key": "name"}, // made NOT NULL, as Paimon does
	}
	for i, o := range accepted {
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: fmt.Sprintf("a%d", i)}
		spec, err := p.CreateTable(ctx, id, schema, o)
		if err != nil {
			t.Errorf("%v: %v", o, err)
			continue
		}
		if bk, ok := spec.Properties["bucket-key"]; ok && bk != "id,name" {
			t.Errorf("%v: bucket-key stored as %q, want %q", o, bk, "id,name")
		}
	}
}
