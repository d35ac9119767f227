package paimon_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

var featuresWarehouse = flag.String("features-warehouse", "", "the warehouse Paimon Java's write-features wrote (make paimon-features-check)")

// renderAny renders a row of a scan as Paimon Java's Tables.render spells
// it: name=value in column order, null as "null".
func renderAny(b arrow.RecordBatch, i int) string {
	var sb strings.Builder
	for j, f := range b.Schema().Fields() {
		if j > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(f.Name + "=")
		c := b.Column(j)
		switch a := c.(type) {
		case nil:
		case *array.Timestamp:
			if a.IsNull(i) {
				sb.WriteString("null")
				break
			}
			sb.WriteString(javaTime(a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit)))
		case *array.Binary:
			fmt.Fprintf(&sb, "0x%x", a.Value(i))
		case *array.FixedSizeBinary:
			fmt.Fprintf(&sb, "0x%x", a.Value(i))
		default:
			if c.IsNull(i) {
				sb.WriteString("null")
			} else {
				sb.WriteString(c.ValueStr(i))
			}
		}
	}
	return sb.String()
}

// javaTime spells an instant as Java's LocalDateTime.toString does: the
// seconds when not zero, the fraction in groups of three digits.
func javaTime(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04")
	n := t.Nanosecond()
	if t.Second() != 0 || n != 0 {
		s += t.Format(":05")
	}
	switch {
	case n == 0:
	case n%1_000_000 == 0:
		s += fmt.Sprintf(".%03d", n/1_000_000)
	case n%1000 == 0:
		s += fmt.Sprintf(".%06d", n/1000)
	default:
		s += fmt.Sprintf(".%09d", n)
	}
	return s
}

func scanAll(ctx context.Context, p *paimon.Provider, id catalogs.TableIdent) ([]string, error) {
	res, err := p.Scan(ctx, id, catalogs.ScanRequest{})
	if err != nil {
		return nil, err
	}
	defer res.Reader.Release()
	var out []string
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		for i := range int(b.NumRows()) {
			out = append(out, renderAny(b, i))
		}
	}
	if err := res.Reader.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// typeRows are the rows of Features' f_types and f_types_pk: TIMESTAMP(9)
// and TIMESTAMP(7) (INT96 in Java's Parquet, negative nanoseconds of day
// before 1970), BINARY(4) and CHAR(3), as Java reads them.
var typeRows = func() []string {
	ts := []string{"1969-12-31T23:59:59.999999999", "1970-01-01T00:00:00.000000001", "1900-01-01T12:34:56.123456789",
		"2024-02-29T23:59:59.999999991", "1969-07-20T20:17:40.000000007"}
	var out []string
	for i, v := range ts {
		ch := "ab"
		if i%2 == 1 {
			ch = "abc"
		}
		out = append(out, fmt.Sprintf("id=%d,ts9=%s,ts7=%s,bin=0x%02x0102ff,ch=%s", i, v, v, i, ch))
	}
	return out
}()

// kvRows are the rows Features.kv leaves with the deduplicate engine:
// keys 0-4 of the second commit, 6-9 of the first (5 deleted).
func kvRows() []string {
	var out []string
	for i := range 10 {
		switch {
		case i < 5:
			out = append(out, fmt.Sprintf("id=%d,name=n1-%d,p=p%d", i, i, i%2))
		case i > 5:
			out = append(out, fmt.Sprintf("id=%d,name=n0-%d,p=p%d", i, i, i%2))
		}
	}
	return out
}

func tenRows(f func(i int) string) []string {
	var out []string
	for i := range 10 {
		out = append(out, f(i))
	}
	slices.Sort(out)
	return out
}

// TestJavaFeatureTables reads and appends to the tables Paimon Java
// 1.4.2's write-features wrote (make paimon-features-check): deletion
// vectors, dynamic buckets, the partial-update, first-row and aggregation
// merge engines, a sequence field, a composite key with NUL bytes, ORC.
// A table whose rows this backend cannot read as Paimon does is refused
// FailedPrecondition naming the option; one it reads gives exactly
// Paimon Java's rows. An append is refused, naming the option, where the
// table asks a writer for what this backend does not do, and leaves the
// table as it was; the composite-key table takes the append. The rows
// each table must then hold go to -samples-expected for Java's
// verify-tables and pypaimon. Before, the appends were committed (with
// indexManifest null: Java read the deleted and updated rows back), and
// the reads returned a deleted row, the wrong merge and one row of two
// NUL-byte keys.
func TestJavaFeatureTables(t *testing.T) {
	if *featuresWarehouse == "" || *samplesExpected == "" {
		t.Skip("-features-warehouse and -samples-expected not set")
	}
	ctx := context.Background()
	p, err := paimon.Open(ctx, "lake", sampleProps(t, *featuresWarehouse, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(*samplesExpected, 0o755); err != nil {
		t.Fatal(err)
	}
	idRow := func(f string) []string {
		return tenRows(func(i int) string { return fmt.Sprintf(f, i, i) })
	}
	cases := []struct {
		name       string
		java       []string // the rows Java wrote, as Java reads them
		readOption string   // the option a read is refused for ("" when read)
		writeOpt   string   // the option an append is refused for ("" when written)
		schema     []arrow.Field
		append     [][]string // rows the gateway appends, when it may
		typed      bool       // append typeAppend instead
		after      []string   // the rows after the append
		// compact: after the append, full_compact must land ("ok") and
		// leave the rows, or be refused naming this option.
		compact string
	}{
		{name: "f_dv", java: kvRows(), writeOpt: "deletion-vectors.enabled", compact: "deletion-vectors.enabled"},
		{name: "f_dyn", java: kvRows(), writeOpt: "bucket", compact: "bucket"},
		{name: "f_postpone", java: nil, writeOpt: "bucket", compact: "bucket"}, // Java reads none: every row waits in bucket-postpone
		{name: "f_partial", java: tenRows(func(i int) string {
			if i < 5 {
				return fmt.Sprintf("id=%d,a=a%d,b=b%d", i, i, i)
			}
			return fmt.Sprintf("id=%d,a=a%d,b=null", i, i)
		}), writeOpt: "merge-engine", compact: "ok"},
		{name: "f_first", java: tenRows(func(i int) string { return fmt.Sprintf("id=%d,name=n0-%d,p=p%d", i, i, i%2) }), writeOpt: "merge-engine", compact: "merge-engine"},
		{name: "f_agg", java: tenRows(func(i int) string {
			if i < 5 {
				return fmt.Sprintf("id=%d,v=11,mx=%d,fnn=f%d,lnn=a%d", i, i, i, i)
			}
			return fmt.Sprintf("id=%d,v=1,mx=%d,fnn=null,lnn=a%d", i, i, i)
		}), writeOpt: "merge-engine", compact: "ok"},
		{name: "f_seq", java: idRow("id=%d,name=n0-%d,ts=10"), writeOpt: "sequence.field", compact: "ok"},
		{name: "f_nul", java: []string{"a=x,b=\x00y,v=second", "a=x\x00,b=y,v=first"},
			schema: []arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}, {Name: "b", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}},
			append: [][]string{{"x", "\x00y", "gateway"}, {"x\x00", "", "new"}},
			after:  []string{"a=x,b=\x00y,v=gateway", "a=x\x00,b=,v=new", "a=x\x00,b=y,v=first"}, compact: "ok"},
		{name: "f_types_pk", java: typeRows, typed: true, compact: "ok",
			after: append(slices.Clone(typeRows[1:]), "id=0,ts9=1969-12-31T23:59:59.999999998,ts7=1969-12-31T23:59:59.999999998,bin=0x0a0b0c0d,ch=xyz")},
		{name: "f_types", java: typeRows, typed: true, compact: "ok",
			after: append(slices.Clone(typeRows), "id=0,ts9=1969-12-31T23:59:59.999999998,ts7=1969-12-31T23:59:59.999999998,bin=0x0a0b0c0d,ch=xyz")},
		{name: "f_orc", java: tenRows(func(i int) string { return fmt.Sprintf("id=%d,name=n0-%d,p=p%d", i, i, i%2) }), readOption: "file.format", writeOpt: "file.format", compact: "file.format"},
	}
	refused := func(what string, err error, option string, id catalogs.TableIdent) {
		t.Helper()
		if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), strconv.Quote(option)) || !strings.Contains(err.Error(), id.String()) {
			t.Errorf("%s %s: %v, want FailedPrecondition naming the table and option %q", id.Name, what, err, option)
		}
	}
	for _, c := range cases {
		slices.Sort(c.java)
		slices.Sort(c.after)
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: c.name}
		got, err := scanAll(ctx, p, id)
		switch {
		case c.readOption != "":
			refused("read", err, c.readOption, id)
		case err != nil:
			t.Errorf("%s: read: %v", c.name, err)
		case !slices.Equal(got, c.java):
			t.Errorf("%s: the backend reads %q, Java %q", c.name, got, c.java)
		}
		if c.typed {
			// The SQL engine would read INT96 to microseconds: not a plain plan.
			if plan, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{}); err != nil || plan.Plain {
				t.Errorf("%s: PlanFiles: plain %v (%v), want the backend's read", c.name, plan != nil && plan.Plain, err)
			}
		}
		spec, err := p.GetTableSpec(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := c.java
		if c.writeOpt != "" {
			b := catalogtestBatch(t, spec.Schema)
			_, err := p.WriteBatch(ctx, id, b)
			b.Release()
			refused("append", err, c.writeOpt, id)
			after, _ := p.GetTableSpec(ctx, id)
			if *after.CurrentSnapshotID != *spec.CurrentSnapshotID {
				t.Errorf("%s: snapshot %d after a refused append, was %d", c.name, *after.CurrentSnapshotID, *spec.CurrentSnapshotID)
			}
		} else if c.append != nil || c.typed {
			var b arrow.RecordBatch
			if c.typed {
				b = typeAppend(spec.Schema)
			} else {
				b = stringBatch(arrow.NewSchema(c.schema, nil), c.append)
			}
			r, err := p.WriteBatch(ctx, id, b)
			b.Release()
			if err != nil {
				t.Fatalf("%s: append: %v", c.name, err)
			}
			if _, err := p.CommitOnce(ctx, id, c.name+"-gateway", []catalogs.WriteReceipt{r}); err != nil {
				t.Fatalf("%s: commit: %v", c.name, err)
			}
			want = c.after
			if got, err := scanAll(ctx, p, id); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s after the append: the backend reads %q (%v), want %q", c.name, got, err, want)
			}
		}
		var rep catalogs.MaintainReport
		if c.compact != "" {
			rep, err = p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskFullCompact}})
		}
		switch {
		case c.compact == "":
		case c.compact != "ok":
			refused("compaction", err, c.compact, id)
		case err != nil || !rep.Tasks[0].Committed:
			t.Errorf("%s: full_compact: %+v, %v; want it committed", c.name, rep, err)
		default:
			if got, err := scanAll(ctx, p, id); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s after the compaction: the backend reads %q (%v), want %q", c.name, got, err, want)
			}
		}
		body := fmt.Sprintf("ROWS %d\n", len(want))
		if len(want) > 0 {
			body += strings.Join(want, "\n") + "\n"
		}
		if err := os.WriteFile(filepath.Join(*samplesExpected, c.name+".txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// catalogtestBatch is one row of the table's schema, every column zero
// (or empty): what an append that must be refused would carry.
func catalogtestBatch(t *testing.T, sc *arrow.Schema) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, f := range sc.Fields() {
		switch bb := b.Field(i).(type) {
		case *array.Int64Builder:
			bb.Append(100)
		case *array.Int32Builder:
			bb.Append(100)
		case *array.StringBuilder:
			bb.Append("gw")
		default:
			t.Fatalf("column %s: type %s", f.Name, f.Type)
		}
	}
	return b.NewRecordBatch()
}

func stringBatch(sc *arrow.Schema, rows [][]string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for j, v := range r {
			b.Field(j).(*array.StringBuilder).Append(v)
		}
	}
	return b.NewRecordBatch()
}

// typeAppend is the row the gateway appends to f_types and f_types_pk
// (replacing key 0 of the latter): instants one nanosecond before 1970's
// last one, a BINARY(4), a CHAR(3).
func typeAppend(sc *arrow.Schema) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(0)
	b.Field(1).(*array.TimestampBuilder).Append(-2)
	b.Field(2).(*array.TimestampBuilder).Append(-2)
	b.Field(3).(*array.FixedSizeBinaryBuilder).Append([]byte{10, 11, 12, 13})
	b.Field(4).(*array.StringBuilder).Append("xyz")
	return b.NewRecordBatch()
}
