package iceberg

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

func TestParseTableOptions(t *testing.T) {
	sc, err := icebergSchema(arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil), 2)
	if err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	for _, tc := range []struct {
		opts map[string]string
		spec string // the partition fields, name=transform(source id); or the error's words
		sort string
		err  bool
	}{
		{opts: map[string]string{"partition": " s, identity(id), bucket(16, id), truncate(4, s), year(ts), months(d), day(ts), hour(ts)"},
			spec: "s=identity(2) id=identity(1) id_bucket=bucket[16](1) s_trunc=truncate[4](2) ts_year=year(3) d_month=month(4) ts_day=day(3) ts_hour=hour(3)"},
		{opts: map[string]string{"partition": "BUCKET(8,id)", "sort": "id desc, s nulls last, ts ASC NULLS FIRST"},
			spec: "id_bucket=bucket[8](1)", sort: "1 desc nulls-last, 2 asc nulls-last, 3 asc nulls-first"},
		{opts: map[string]string{"sort": "s desc nulls first"}, sort: "2 desc nulls-first"},
		{opts: map[string]string{"format-version": "1", "write.metadata.metrics.column.s": "truncate(8)", "gc.enabled": "false"}},
		{opts: map[string]string{"partition": "day(s)"}, spec: `option "partition": day(s): transform day cannot apply to column "s" of type string`, err: true},
		{opts: map[string]string{"partition": "hour(d)"}, spec: `column "d" of type date`, err: true},
		{opts: map[string]string{"partition": "tags"}, spec: `column "tags" is of type list<string>`, err: true},
		{opts: map[string]string{"partition": "id, id"}, spec: `partition field "id" appears twice`, err: true},
		{opts: map[string]string{"partition": "bucket(id)"}, spec: "bucket takes a width and a column", err: true},
		{opts: map[string]string{"partition": "truncate(-1, s)"}, spec: `"-1" is not a width`, err: true},
		{opts: map[string]string{"partition": "day(ts"}, spec: "unbalanced", err: true},
		{opts: map[string]string{"partition": "id,"}, spec: "empty term", err: true},
		{opts: map[string]string{"partition": "void(id)"}, spec: `unknown transform "void"`, err: true},
		{opts: map[string]string{"sort": "id, id desc"}, spec: `option "sort": column "id" appears twice`, err: true},
		{opts: map[string]string{"sort": "id nulls"}, spec: `option "sort"`, err: true},
		{opts: map[string]string{"format-version": "4"}, spec: `option "format-version": "4"`, err: true},
		{opts: map[string]string{"write.parquet.page-size-bytes": "0"}, spec: "write.parquet.page-size-bytes", err: true},
		{opts: map[string]string{"write.parquet.compression-codec": "gzip", "write.parquet.compression-level": "12"}, spec: "gzip", err: true},
		{opts: map[string]string{"write.object-storage.enabled": "true"}, spec: "write.object-storage.enabled", err: true},
		{opts: map[string]string{"encryption.key-id": "k"}, spec: "client-side encryption", err: true},
		{opts: map[string]string{"encryption.kms-key-id": ""}, spec: "encryption.kms-key-id", err: true},
		{opts: map[string]string{"encryption.kms-key-id": "arn:aws:kms:us-east-1:1:key/k"}},
		{opts: map[string]string{"current-snapshot-id": "1"}, spec: "reserved", err: true},
		{opts: map[string]string{"Partition": "id"}, spec: `option "Partition"`, err: true},
	} {
		got, err := parseTableOptions(id, sc, tc.opts)
		if tc.err {
			if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.spec) {
				t.Errorf("%v: err = %v, want InvalidArgument with %s", tc.opts, err, tc.spec)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.opts, err)
			continue
		}
		var spec []string
		if got.spec != nil {
			for _, f := range got.spec.Fields() {
				spec = append(spec, f.Name+"="+f.Transform.String()+"("+itoa(f.SourceID())+")")
			}
		}
		if s := strings.Join(spec, " "); s != tc.spec {
			t.Errorf("%v: spec %q, want %q", tc.opts, s, tc.spec)
		}
		var order []string
		for _, f := range got.order.Fields() {
			order = append(order, itoa(f.SourceIDs[0])+" "+string(f.Direction)+" "+string(f.NullOrder))
		}
		if s := strings.Join(order, ", "); s != tc.sort {
			t.Errorf("%v: sort %q, want %q", tc.opts, s, tc.sort)
		}
		for k, v := range tc.opts {
			if k != "partition" && k != "sort" && got.props[k] != v {
				t.Errorf("%v: property %s = %q", tc.opts, k, got.props[k])
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
