// Command seed writes the JDBC suite's tables into a gateway through ADBC
// bulk ingest (JDBC has no bulk ingest of its own):
//
//	sales(id BIGINT, region VARCHAR, amount DOUBLE, qty INTEGER): 1000 rows,
//	  id 0..999, region eu/us/apac by id%3, amount id*1.5, qty id%10, in
//	  two data files (ids below 600, the rest), so that a gateway with a
//	  small engine.split_min_bytes splits row-local queries over it
//	regions(region VARCHAR, manager VARCHAR): 3 rows
//	alltypes: one column of each type the lake stores (see allTypes), one
//	  row
//	events(id BIGINT, ts TIMESTAMP, tm TIME): one row, id 0
//	people(id BIGINT, name VARCHAR): ids 1..3, names a b c, as README.md's
//	  first Python example makes it (its Java example reads it)
//
// Usage: seed grpc://127.0.0.1:PORT [USER PASSWORD]
//
// With FLIGHTGW_SEED_TLS_DIR set, it connects with the CA and client
// certificate in that directory (grpc+tls://); "seed tls DIR" writes
// them (see writePKI).
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "tls" {
		if err := writePKI(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "seed tls:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && (os.Args[2] == "--starrocks" || os.Args[2] == "--starrocks-drop") {
		// A StarRocks database for StarRocksJdbcTest (starrocks.go).
		var err error
		if os.Args[2] == "--starrocks" {
			err = seedStarRocks(context.Background(), os.Args[1], os.Args[3])
		} else {
			err = dropStarRocks(context.Background(), os.Args[3])
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "seed starrocks:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 2 && len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: seed grpc://HOST:PORT [USER PASSWORD] | seed grpc://HOST:PORT --starrocks[-drop] DATABASE | seed tls DIR")
		os.Exit(2)
	}
	opts := map[string]string{adbc.OptionKeyURI: os.Args[1]}
	if len(os.Args) == 4 {
		opts[adbc.OptionKeyUsername], opts[adbc.OptionKeyPassword] = os.Args[2], os.Args[3]
	}
	if dir := os.Getenv("FLIGHTGW_SEED_TLS_DIR"); dir != "" {
		if err := tlsOptions(dir, opts); err != nil {
			fmt.Fprintln(os.Stderr, "seed:", err)
			os.Exit(1)
		}
	}
	if err := run(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

var regionNames = []string{"eu", "us", "apac"}

func run(ctx context.Context, opts map[string]string) error {
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(opts)
	if err != nil {
		return err
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return err
	}
	defer cnxn.Close()

	sales := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil))
	defer sales.Release()
	for i := range 1000 {
		sales.Field(0).(*array.Int64Builder).Append(int64(i))
		sales.Field(1).(*array.StringBuilder).Append(regionNames[i%3])
		sales.Field(2).(*array.Float64Builder).Append(float64(i) * 1.5)
		sales.Field(3).(*array.Int32Builder).Append(int32(i % 10))
	}
	regions := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "region", Type: arrow.BinaryTypes.String},
		{Name: "manager", Type: arrow.BinaryTypes.String},
	}, nil))
	defer regions.Release()
	for i, r := range regionNames {
		regions.Field(0).(*array.StringBuilder).Append(r)
		regions.Field(1).(*array.StringBuilder).Append([]string{"ann", "bob", "cho"}[i])
	}
	all, err := allTypes()
	if err != nil {
		return err
	}
	defer all.Release()
	if err := ingest(ctx, cnxn, "alltypes", all, adbc.OptionValueIngestModeReplace); err != nil {
		return fmt.Errorf("ingest alltypes: %w", err)
	}
	events, _, err := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "tm", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	}, nil), strings.NewReader(`[{"id": 0, "ts": "2000-01-01 00:00:00", "tm": "00:00:00"}]`))
	if err != nil {
		return err
	}
	defer events.Release()
	if err := ingest(ctx, cnxn, "events", events, adbc.OptionValueIngestModeReplace); err != nil {
		return fmt.Errorf("ingest events: %w", err)
	}
	people, _, err := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil), strings.NewReader(`[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]`))
	if err != nil {
		return err
	}
	defer people.Release()
	if err := ingest(ctx, cnxn, "people", people, adbc.OptionValueIngestModeReplace); err != nil {
		return fmt.Errorf("ingest people: %w", err)
	}
	for name, b := range map[string]*array.RecordBuilder{"sales": sales, "regions": regions} {
		rec := b.NewRecordBatch()
		var err error
		if name == "sales" {
			first, rest := rec.NewSlice(0, 600), rec.NewSlice(600, rec.NumRows())
			err = ingest(ctx, cnxn, name, first, adbc.OptionValueIngestModeReplace)
			if err == nil {
				err = ingest(ctx, cnxn, name, rest, adbc.OptionValueIngestModeAppend)
			}
			first.Release()
			rest.Release()
		} else {
			err = ingest(ctx, cnxn, name, rec, adbc.OptionValueIngestModeReplace)
		}
		rec.Release()
		if err != nil {
			return fmt.Errorf("ingest %s: %w", name, err)
		}
	}
	return nil
}

// allTypes is the alltypes table's one row.
func allTypes() (arrow.RecordBatch, error) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "d10", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "d38", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "tm", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "tstz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"b": true, "i": 1, "l": 2,
		"f": 1.5, "d": 2.5, "d10": "12345678.91", "d38": "1.0000000001", "s": "x", "bin": "AQI=", "dt": "2024-02-29",
		"tm": "12:34:56.789012", "ts": "2024-02-29 12:34:56.789012", "tstz": "2024-02-29 12:34:56.789012Z"}]`))
	return rec, err
}

func ingest(ctx context.Context, cnxn adbc.Connection, table string, rec arrow.RecordBatch, mode string) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, table); err != nil {
		return err
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, mode); err != nil {
		return err
	}
	if err := stmt.Bind(ctx, rec); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}
