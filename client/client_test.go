package client

import (
	"reflect"
	"testing"

	"github.com/flightgw/flightgw/codec/actions"
)

func TestMerge(t *testing.T) {
	a := actions.TableRef{Catalog: "lake", Schema: "default", Table: "a"}
	b := actions.TableRef{Catalog: "lake", Schema: "default", Table: "b"}
	otherCatalog := actions.TableRef{Catalog: "ops", Schema: "default", Table: "a"}
	w1 := []TablePayloads{{TableRef: a, Payloads: [][]byte{[]byte("1a")}, Rows: 1}, {TableRef: b, Payloads: [][]byte{[]byte("1b")}, Rows: 2}}
	w2 := []TablePayloads{{TableRef: b, Payloads: [][]byte{[]byte("2b")}, Rows: 3}}
	w3 := []TablePayloads{{TableRef: otherCatalog, Payloads: [][]byte{[]byte("3a")}, Rows: 4}, {TableRef: a, Payloads: [][]byte{[]byte("3a")}, Rows: 5}}
	for _, c := range []struct {
		name string
		in   [][]TablePayloads
		want []TablePayloads
	}{
		{"none", nil, nil},
		{"one worker", [][]TablePayloads{w1}, w1},
		{"by table, first-seen order", [][]TablePayloads{w1, w2, w3}, []TablePayloads{
			{TableRef: a, Payloads: [][]byte{[]byte("1a"), []byte("3a")}, Rows: 6},
			{TableRef: b, Payloads: [][]byte{[]byte("1b"), []byte("2b")}, Rows: 5},
			{TableRef: otherCatalog, Payloads: [][]byte{[]byte("3a")}, Rows: 4},
		}},
	} {
		if got := Merge(c.in...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Merge = %+v, want %+v", c.name, got, c.want)
		}
	}
	// Merge does not write into its inputs' slices.
	if len(w1[0].Payloads) != 1 || len(w2[0].Payloads) != 1 {
		t.Errorf("Merge changed its inputs: %+v %+v", w1, w2)
	}
}
