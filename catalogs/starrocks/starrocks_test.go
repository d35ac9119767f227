package starrocks

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/go-sql-driver/mysql"

	"github.com/flightgw/flightgw/catalogs"
)

var tbl = catalogs.TableIdent{Catalog: "sr", Namespace: []string{"db"}, Name: "t"}

func TestLabel(t *testing.T) {
	valid := regexp.MustCompile(`^[-_A-Za-z0-9:]{1,128}$`)
	long := strings.Repeat("x", 300)
	cases := []struct{ commit, table string }{
		{"txn-abc", "orders"}, {"idem-" + long, "t"}, {"c", "Ünïcode tâble/with.dots"}, {"c", long},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		l := label(c.commit, "db", c.table)
		if !valid.MatchString(l) {
			t.Errorf("label(%q, %q) = %q: not a valid StarRocks label", c.commit, c.table, l)
		}
		if seen[l] {
			t.Errorf("label(%q, %q) = %q twice", c.commit, c.table, l)
		}
		seen[l] = true
		if label(c.commit, "db", c.table) != l {
			t.Errorf("label(%q, %q) is not stable", c.commit, c.table)
		}
	}
	if label("c", "db", "a") == label("c", "db2", "a") || label("c", "db", "a") == label("c2", "db", "a") {
		t.Error("labels of another database or commit id collide")
	}
}

func TestCreateDDL(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
	}, nil)
	ddl, err := createDDL(tbl, "db", s, "1", layout{})
	if err != nil {
		t.Fatal(err)
	}
	want := "CREATE TABLE `db`.`t` (\n  `id` BIGINT NOT NULL,\n  `name` STRING NULL,\n  `at` DATETIME NULL,\n  `amount` DECIMAL(12,2) NULL\n) ENGINE=OLAP\n" +
		"DUPLICATE KEY(`id`)\nDISTRIBUTED BY HASH(`id`)\nPROPERTIES (\"replication_num\" = \"1\")"
	if ddl != want {
		t.Errorf("DDL =\n%s\nwant\n%s", ddl, want)
	}
	md := arrow.NewMetadata([]string{PrimaryKeyMetadata}, []string{"id"})
	pk, err := createDDL(tbl, "db", arrow.NewSchema(s.Fields(), &md), "", layout{})
	if err != nil || !strings.Contains(pk, "PRIMARY KEY(`id`)\nDISTRIBUTED BY HASH(`id`)") {
		t.Errorf("primary-key DDL = %q, %v", pk, err)
	}
	md = arrow.NewMetadata([]string{PrimaryKeyMetadata}, []string{"name"})
	_, err = createDDL(tbl, "db", arrow.NewSchema(s.Fields(), &md), "", layout{})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), `"name"`) {
		t.Errorf("primary key on a later nullable column: %v", err)
	}
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.Binary, &arrow.TimestampType{Unit: arrow.Nanosecond},
		arrow.ListOf(arrow.PrimitiveTypes.Int32), &arrow.DurationType{Unit: arrow.Second}} {
		_, err := createDDL(tbl, "db", arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "odd", Type: typ}}, nil), "", layout{})
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), `"odd"`) {
			t.Errorf("column of %s: %v, want an invalid argument naming it", typ, err)
		}
	}
}

func TestCreateDDLOptions(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.PrimitiveTypes.Int32},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	ok := []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"primary-key": "id, region"}, "PRIMARY KEY(`id`, `region`)\nDISTRIBUTED BY HASH(`id`, `region`)"},
		{map[string]string{"primary-key": "id,region", "distributed-by": "region", "buckets": "8"}, "PRIMARY KEY(`id`, `region`)\nDISTRIBUTED BY HASH(`region`) BUCKETS 8"},
		{map[string]string{"distributed-by": "region"}, "DUPLICATE KEY(`id`)\nDISTRIBUTED BY HASH(`region`)"},
		{map[string]string{"buckets": "3"}, "DUPLICATE KEY(`id`)\nDISTRIBUTED BY HASH(`id`) BUCKETS 3"},
	}
	for _, c := range ok {
		lay, err := parseLayout(tbl, c.opts)
		if err != nil {
			t.Fatalf("%v: %v", c.opts, err)
		}
		ddl, err := createDDL(tbl, "db", s, "", lay)
		if err != nil || !strings.HasSuffix(ddl, ") ENGINE=OLAP\n"+c.want) {
			t.Errorf("%v: DDL = %q, %v; want it to end %q", c.opts, ddl, err, c.want)
		}
	}
	bad := []struct {
		opts map[string]string
		says string
	}{
		{map[string]string{"primary-key": "region"}, `"region" must be column 1`},
		{map[string]string{"primary-key": "id,region,note"}, `"note" must be required`},
		{map[string]string{"primary-key": "id", "distributed-by": "region"}, `"region" is not in the primary key`},
		{map[string]string{"distributed-by": "nope"}, `"nope" is not in the schema`},
		{map[string]string{"distributed-by": "note"}, `"note" is STRING`},
		{map[string]string{"buckets": "0"}, "buckets"},
		{map[string]string{"primary-key": " , "}, "primary-key"},
		{map[string]string{"bucket-key": "id"}, `"bucket-key" is not a StarRocks table option`},
	}
	for _, c := range bad {
		lay, err := parseLayout(tbl, c.opts)
		if err == nil {
			_, err = createDDL(tbl, "db", s, "", lay)
		}
		if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v, want an invalid argument saying %s", c.opts, err, c.says)
		}
	}
	md := arrow.NewMetadata([]string{PrimaryKeyMetadata}, []string{"id"})
	lay, _ := parseLayout(tbl, map[string]string{"primary-key": "id,region"})
	if _, err := createDDL(tbl, "db", arrow.NewSchema(s.Fields(), &md), "", lay); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("option and metadata naming different keys: %v", err)
	}
}

func TestEncodeJSON(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 0}, []bool{true, false})
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"tab\there \"q\" \\N\n,é", ""}, []bool{true, false})
	b.Field(2).(*array.Date32Builder).AppendValues([]arrow.Date32{19000, 0}, []bool{true, false})
	b.Field(3).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1700000000123, 0}, []bool{true, false})
	b.Field(4).(*array.Float64Builder).AppendValues([]float64{0.1, 0}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()
	got, err := encodeJSON(tbl, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"i":1,"s":"tab\there \"q\" \\N\n,é","d":"2022-01-08","ts":"2023-11-14 22:13:20.123000","f":0.1},` +
		`{"i":null,"s":null,"d":null,"ts":null,"f":null}]`
	if string(got) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", got, want)
	}
}

func TestConfigRedactsPassword(t *testing.T) {
	_, err := parseConfig(map[string]string{propFE: "http://u:hunter22@fe:8030", propMySQL: "fe:9030", propUser: "u", propPassword: "hunter22"})
	if err == nil || strings.Contains(err.Error(), "hunter22") {
		t.Errorf("credentials in the FE address: %v (must be refused without echoing the password)", err)
	}
	_, err = parseConfig(map[string]string{propFE: "fe:8030", propMySQL: "fe:9030", propUser: "u", propPassword: "hunter22", "bogus": "x"})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown property: %v", err)
	}
}

// TestDatabaseGate: every access goes through config.database, which
// refuses StarRocks' system databases in any case (PermissionDenied,
// naming the database), and, when the databases property is set, every
// namespace it does not map (NotFound) — including a mapped database
// under its own name.
func TestDatabaseGate(t *testing.T) {
	open, err := parseConfig(map[string]string{propFE: "fe:8030", propMySQL: "fe:9030", propUser: "u"})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := parseConfig(map[string]string{propFE: "fe:8030", propMySQL: "fe:9030", propUser: "u", propDatabases: "app=sales_prod, sys=ops"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cfg  config
		ns   string
		db   string // "" when refused
		kind error
	}{
		{open, "sales", "sales", nil},
		{open, "mysql", "", catalogs.ErrPermissionDenied},
		{open, "MySQL", "", catalogs.ErrPermissionDenied},
		{open, "SYS", "", catalogs.ErrPermissionDenied},
		{open, "information_schema", "", catalogs.ErrPermissionDenied},
		{open, "INFORMATION_SCHEMA", "", catalogs.ErrPermissionDenied},
		{open, "performance_schema", "", catalogs.ErrPermissionDenied},
		{open, "_statistics_", "", catalogs.ErrPermissionDenied},
		{open, "starrocks_audit_db__", "", catalogs.ErrPermissionDenied},
		{open, "_starrocks_audit_db_", "", catalogs.ErrPermissionDenied},
		{open, "`mysql`", "", catalogs.ErrInvalidArgument},
		{bound, "app", "sales_prod", nil},
		{bound, "sys", "ops", nil}, // a namespace named like one, mapped to a user database
		{bound, "sales_prod", "", catalogs.ErrNotFound},
		{bound, "other", "", catalogs.ErrNotFound},
		{bound, "mysql", "", catalogs.ErrNotFound},
	}
	for _, c := range cases {
		tb := catalogs.TableIdent{Catalog: "sr", Namespace: []string{c.ns}, Name: "t"}
		db, err := c.cfg.database(tb)
		switch {
		case c.kind == nil && (err != nil || db != c.db):
			t.Errorf("%s: database %q, %v; want %q", tb, db, err, c.db)
		case c.kind != nil && (!errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.ns)):
			t.Errorf("%s: %q, %v; want %v naming %s", tb, db, err, c.kind, c.ns)
		}
	}
	if got := bound.namespacesOf("sales_prod"); len(got) != 1 || got[0] != "app" {
		t.Errorf("namespacesOf(sales_prod) = %v, want [app]", got)
	}
	if got := bound.namespacesOf("other"); got != nil {
		t.Errorf("namespacesOf(other) under a databases list = %v, want none", got)
	}
	if got := open.namespacesOf("Performance_Schema"); got != nil {
		t.Errorf("namespacesOf(Performance_Schema) = %v, want none", got)
	}
	_, err = parseConfig(map[string]string{propFE: "fe:8030", propMySQL: "fe:9030", propUser: "u", propDatabases: "meta=mysql"})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "mysql") {
		t.Errorf("databases mapping to mysql: %v, want InvalidArgument naming it", err)
	}
}

// TestSQLErrorClasses: StarRocks' (MySQL's) refusal of a name the client
// chose (too long, a character it does not take) is InvalidArgument, like
// the other client errors, not FailedPrecondition; the server's own
// failures keep their kinds.
func TestSQLErrorClasses(t *testing.T) {
	p := &Provider{cfg: config{user: "loader"}}
	for _, c := range []struct {
		number uint16
		kind   error
	}{
		{1059, catalogs.ErrInvalidArgument}, // ER_TOO_LONG_IDENT
		{1102, catalogs.ErrInvalidArgument}, // ER_WRONG_DB_NAME
		{1103, catalogs.ErrInvalidArgument}, // ER_WRONG_TABLE_NAME
		{1166, catalogs.ErrInvalidArgument}, // ER_WRONG_COLUMN_NAME
		{1049, catalogs.ErrNotFound},
		{1050, catalogs.ErrAlreadyExists},
		{1146, catalogs.ErrNotFound},
		{1142, catalogs.ErrPermissionDenied},
		{1105, catalogs.ErrFailedPrecondition},
	} {
		err := p.sqlError(tbl, "create table", &mysql.MySQLError{Number: c.number, Message: "refused"})
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), tbl.String()) {
			t.Errorf("MySQL error %d: %v, want %v naming the table", c.number, err, c.kind)
		}
	}
}
