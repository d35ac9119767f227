package integration

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// hostileNames are the spellings of a path a client may try as a name:
// each must be refused before a backend builds a location from it.
var hostileNames = []string{
	"..", "../x", "x/..", ".", "a/b",
	"%2e%2e", "%2e%2e%2f", "%2e%2e%2f%2e%2e", "%2e%2e%2f%2e%2e%2f%2e%2e%2fwarehouse", "x%2f..%2f..",
	"%252e%252e%252f", "%252e%252e%252f%252e%252e",
	`..\x`, `a\b`, "%5c..%5c",
	"%00", "a\x00b",
	"\u2024\u2024", "\u2024\u2024/x", "\uff0e\uff0e", "\uff0e\uff0e\uff0fx", "\u3002\u3002",
	"a b", `a"b`, "a'b", "🦆", "a%20b", "a?b", "a#b", "a;b",
	strings.Repeat("n", 300),
}

// TestHostileNamesAreRefused ingests under every hostile name, as a table
// and as a namespace, in mode create then replace with other columns (the
// drop-and-purge path): each is InvalidArgument naming the rule, and no
// file or directory anywhere in the data dir appears or disappears.
func TestHostileNamesAreRefused(t *testing.T) {
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "keep", adbc.OptionValueIngestModeCreate, people(t, 0, 3)); err != nil {
		t.Fatal(err)
	}
	before := dataDirTree(t, g.dataDir)
	other := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "other", Type: arrow.BinaryTypes.String, Nullable: true}}, nil),
		func(int) string { return `{"other": "x"}` }, 1)

	for _, name := range hostileNames {
		for _, as := range []string{"table", "namespace"} {
			table, opts := name, []string(nil)
			if as == "namespace" {
				table, opts = "t", []string{adbc.OptionValueIngestTargetDBSchema, name}
			}
			for _, step := range []struct {
				mode string
				rec  arrow.RecordBatch
			}{{adbc.OptionValueIngestModeCreate, people(t, 0, 2)}, {adbc.OptionValueIngestModeReplace, other}} {
				_, err := ingest(t, cnxn, table, step.mode, step.rec, opts...)
				assertRefusedName(t, err, name, as, step.mode)
			}
		}
	}
	if after := dataDirTree(t, g.dataDir); !slices.Equal(before, after) {
		t.Fatalf("hostile ingests changed the data dir:\n%s", treeDiff(before, after))
	}
	if got := int64Column(t, g.readTable(t, "keep"), "id"); !slices.Equal(got, ids(0, 3)) {
		t.Fatalf("table keep changed: %v", got)
	}
}

// TestHostileNamesInSQL: a hostile name written in SQL, as a table read
// or an INSERT target, is refused the same way; metadata filters are
// patterns, where '%' keeps its meaning.
func TestHostileNamesInSQL(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "keep", adbc.OptionValueIngestModeCreate, people(t, 0, 3)); err != nil {
		t.Fatal(err)
	}
	before := dataDirTree(t, g.dataDir)
	ctx := context.Background()
	for _, name := range []string{"%2e%2e", "%2e%2e%2f%2e%2e", "a b", "\uff0e\uff0e", strings.Repeat("n", 300), "%00"} {
		q := strings.ReplaceAll(name, `"`, `""`)
		for _, sql := range []string{
			`SELECT * FROM "` + q + `"`,
			`SELECT * FROM "` + q + `".keep`,
			`INSERT INTO "` + q + `" VALUES (1, 'a')`,
		} {
			stmt, err := cnxn.NewStatement()
			if err != nil {
				t.Fatal(err)
			}
			if err := stmt.SetSqlQuery(sql); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(sql, "INSERT") {
				_, err = stmt.ExecuteUpdate(ctx)
			} else {
				var rdr array.RecordReader
				if rdr, _, err = stmt.ExecuteQuery(ctx); err == nil {
					for rdr.Next() {
					}
					err = rdr.Err()
					rdr.Release()
				}
			}
			stmt.Close()
			assertRefusedName(t, err, name, "sql", sql)
		}
	}
	// A session's default schema is a namespace name too.
	opts, err := flight.NewSessionOptionValues(map[string]any{"schema": "%2e%2e"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.flightClient(t).SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts})
	if err != nil || res.Errors["schema"] == nil {
		t.Errorf("session schema %q accepted: %v %v", "%2e%2e", res, err)
	}
	pattern := "%"
	rdr, err := cnxn.GetObjects(ctx, adbc.ObjectDepthTables, nil, &pattern, &pattern, nil, nil)
	if err != nil {
		t.Fatalf("GetObjects with %% patterns: %v", err)
	}
	rdr.Release()
	if after := dataDirTree(t, g.dataDir); !slices.Equal(before, after) {
		t.Fatalf("hostile queries changed the data dir:\n%s", treeDiff(before, after))
	}
}

// assertRefusedName checks err is InvalidArgument and states the rule.
func assertRefusedName(t *testing.T, err error, name, as, what string) {
	t.Helper()
	var ae adbc.Error
	switch {
	case err == nil:
		t.Errorf("%s %q (%s) was accepted", as, name, what)
	case !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument:
		t.Errorf("%s %q (%s): %v, want InvalidArgument", as, name, what, err)
	case !strings.Contains(ae.Msg, "[A-Za-z0-9_-]") && !strings.Contains(ae.Msg, "empty name component"):
		t.Errorf("%s %q (%s): message %q does not state the name rule", as, name, what, ae.Msg)
	}
}

// dataDirTree lists every file and directory under dir (SQLite's
// transient journal files aside), relative and sorted.
func dataDirTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasSuffix(rel, "-journal") || strings.HasSuffix(rel, "-wal") || strings.HasSuffix(rel, "-shm") {
			return nil
		}
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// treeDiff prints what appeared (+) and disappeared (-).
func treeDiff(before, after []string) string {
	var b strings.Builder
	for _, p := range after {
		if !slices.Contains(before, p) {
			b.WriteString("+ " + p + "\n")
		}
	}
	for _, p := range before {
		if !slices.Contains(after, p) {
			b.WriteString("- " + p + "\n")
		}
	}
	return b.String()
}

// TestReplaceNeverPurgesOutsideTheWarehouse: a table another engine
// registered in the shared catalog with its location outside the
// warehouse (here the data dir itself, holding catalog.db) cannot be
// replaced with other columns, the path that drops and purges: the ingest
// is PermissionDenied naming the table, and no file is deleted.
func TestReplaceNeverPurgesOutsideTheWarehouse(t *testing.T) {
	g := startGateway(t, "")
	cnxn := g.adbcConn(t, nil)
	if _, err := ingest(t, cnxn, "keep", adbc.OptionValueIngestModeCreate, people(t, 0, 3)); err != nil {
		t.Fatal(err)
	}
	sc := ice.NewSchema(0, ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true})
	for name, loc := range map[string]string{
		"squat":   "file://" + g.dataDir,
		"encoded": "file://" + filepath.Join(g.dataDir, "warehouse") + "/%2e%2e",
	} {
		if _, err := g.catalog(t).CreateTable(context.Background(), table.Identifier{"default", name}, sc, catalog.WithLocation(loc)); err != nil {
			t.Fatal(err)
		}
		before := dataDirTree(t, g.dataDir)
		other := batchFromJSON(t, arrow.NewSchema([]arrow.Field{{Name: "other", Type: arrow.BinaryTypes.String, Nullable: true}}, nil),
			func(int) string { return `{"other": "x"}` }, 1)
		_, err := ingest(t, cnxn, name, adbc.OptionValueIngestModeReplace, other)
		assertADBC(t, err, adbc.StatusUnauthorized, "lake.default."+name)
		if after := dataDirTree(t, g.dataDir); !slices.Equal(before, after) {
			t.Fatalf("replace of %s at %s changed the data dir:\n%s", name, loc, treeDiff(before, after))
		}
	}
	if got := int64Column(t, g.readTable(t, "keep"), "id"); !slices.Equal(got, ids(0, 3)) {
		t.Fatalf("table keep changed: %v", got)
	}
}
