package catalogtest_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// capsMem is the double with the capabilities a database or a table
// format may add: table options, a schema-replacing stream and query
// push-down (the suite's own queries only).
type capsMem struct{ *mem }

var (
	_ catalogs.TableManager   = capsMem{}
	_ catalogs.SchemaReplacer = capsMem{}
	_ catalogs.QueryPusher    = capsMem{}
)

// memOption is the one table option the double takes.
const memOption = "mem.comment"

// CheckTableOptions implements catalogs.TableManager: only
// memOption is known.
func (v capsMem) CheckTableOptions(t catalogs.TableIdent, _ *arrow.Schema, opts map[string]string) error {
	if v.flaw == "options-ignored" {
		return nil
	}
	for k := range opts {
		if k != memOption {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q is not one of catalog %q's", t, k, v.name)
		}
	}
	return nil
}

// CreateTable implements catalogs.TableManager, with memOption.
func (v capsMem) CreateTable(_ context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (catalogs.TableSpec, error) {
	if err := v.CheckTableOptions(t, schema, opts); err != nil {
		return catalogs.TableSpec{}, err
	}
	return v.create(t, schema)
}

// OpenReplaceStream implements catalogs.SchemaReplacer: the stream's
// batches are staged under schema, which an overwrite commit makes the
// table's.
func (v capsMem) OpenReplaceStream(_ context.Context, t catalogs.TableIdent, schema *arrow.Schema) (catalogs.WriteStream, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	tbl, err := v.table(t)
	if err != nil {
		return nil, err
	}
	return &memReplaceStream{m: v.mem, tbl: tbl, as: &memTable{ident: t, schema: schema}}, nil
}

// memReplaceStream stages a replace's batches.
type memReplaceStream struct {
	m       *mem
	tbl     *memTable
	as      *memTable // the table as the replace will leave it
	batches []arrow.RecordBatch
	done    bool
}

func (s *memReplaceStream) Write(_ context.Context, batch arrow.RecordBatch) error {
	if s.done {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: replace stream has ended", s.tbl.ident)
	}
	b, err := conform(s.as, batch)
	if err != nil {
		return err
	}
	s.batches = append(s.batches, b)
	return nil
}

func (s *memReplaceStream) Close(context.Context) ([]catalogs.WriteReceipt, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.done = true
	var out []catalogs.WriteReceipt
	for _, b := range s.batches {
		id := s.m.nextID("replace")
		s.m.staged[id] = &memStaged{table: s.tbl, batch: b, schema: s.as.schema}
		out = append(out, receipt(memReceipt{Mem: id}, b))
	}
	s.batches = nil
	return out, nil
}

func (s *memReplaceStream) Abort(context.Context) error {
	s.done, s.batches = true, nil
	return nil
}

// pushable is the suite's query shapes: a column list or count(*), from
// one table, with an optional lower bound on id.
var pushable = regexp.MustCompile(`^SELECT (.+) FROM (\S+)(?: WHERE id >= (\d+))?$`)

// PushQuery implements catalogs.QueryPusher for the suite's queries.
func (v capsMem) PushQuery(_ context.Context, q catalogs.PushedQuery) (array.RecordReader, error) {
	text, err := q.Render(func(t catalogs.TableIdent) (string, error) { return t.Key(), nil })
	if err != nil {
		return nil, err
	}
	m := pushable.FindStringSubmatch(text)
	if m == nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q cannot run %q", v.name, text)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	tbl, ok := v.tables[m[2]]
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", m[2])
	}
	from := int64(-1 << 63)
	if m[3] != "" && v.flaw != "push-ignores-filter" {
		from, _ = strconv.ParseInt(m[3], 10, 64)
	}
	keep := func(b arrow.RecordBatch, i int) bool {
		return b.Column(tbl.schema.FieldIndices("id")[0]).(*array.Int64).Value(i) >= from
	}
	var cols []arrow.Array
	if strings.HasPrefix(m[1], "count(*)") {
		var n int64
		for _, b := range tbl.rows {
			for i := range int(b.NumRows()) {
				if keep(b, i) {
					n++
				}
			}
		}
		c := array.NewInt64Builder(memory.DefaultAllocator)
		c.Append(n)
		cols = append(cols, c.NewArray())
		c.Release()
	} else {
		for _, name := range strings.Split(m[1], ", ") {
			j := tbl.schema.FieldIndices(name)
			if j == nil {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", tbl.ident, name)
			}
			c := array.NewBuilder(memory.DefaultAllocator, tbl.schema.Field(j[0]).Type)
			for _, b := range tbl.rows {
				for i := range int(b.NumRows()) {
					if keep(b, i) {
						if err := c.AppendValueFromString(b.Column(j[0]).ValueStr(i)); err != nil {
							c.Release()
							return nil, err
						}
					}
				}
			}
			cols = append(cols, c.NewArray())
			c.Release()
		}
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	if v.flaw == "push-count-unchecked" {
		// The result in the backend's own typing, whatever the client was told.
		names := strings.Split(m[1], ", ")
		fields := make([]arrow.Field, len(cols))
		for i, c := range cols {
			_, as, ok := strings.Cut(names[i], " AS ")
			if !ok {
				as = names[i]
			}
			fields[i] = arrow.Field{Name: as, Type: c.DataType(), Nullable: q.Schema.Field(i).Nullable}
		}
		own := arrow.NewSchema(fields, nil)
		b := array.NewRecordBatch(own, cols, int64(cols[0].Len()))
		defer b.Release()
		return array.NewRecordReader(own, []arrow.RecordBatch{b})
	}
	if len(cols) != q.Schema.NumFields() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "pushed query has %d columns, its schema %d", len(cols), q.Schema.NumFields())
	}
	for i, f := range q.Schema.Fields() {
		if !arrow.TypeEqual(cols[i].DataType(), f.Type) {
			return nil, fmt.Errorf("pushed query column %s is %s, its schema's %s", f.Name, cols[i].DataType(), f.Type)
		}
	}
	b := array.NewRecordBatch(q.Schema, cols, int64(cols[0].Len()))
	defer b.Release()
	return array.NewRecordReader(q.Schema, []arrow.RecordBatch{b})
}
