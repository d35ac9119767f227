package iceberg

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

func TestResolveLocation(t *testing.T) {
	for _, tc := range []struct {
		loc, want string // want "" when refused
	}{
		{"/wh/default.db/t", "file:///wh/default.db/t"},
		{"/wh/default.db/t/", "file:///wh/default.db/t"},
		{"file:///wh/default.db/t", "file:///wh/default.db/t"},
		{"file://localhost/wh/t", "file:///wh/t"},
		// By its characters, as the IO (literalFS), Iceberg Java, pyiceberg
		// and DuckDB read it; refused below when it decodes to an unclean path.
		{"file:///wh/a%20b", "file:///wh/a%20b"},
		{"file:///wh/%252e%252e", "file:///wh/%252e%252e"},
		{"FILE://localhost/wh/p%C3%A9", "file:///wh/p%C3%A9"},
		{"s3://bucket/wh/t", "s3://bucket/wh/t"},
		{"s3a://bucket/wh/t", "s3://bucket/wh/t"},
		{"s3://bucket/wh/%2e%2e", "s3://bucket/wh/%2e%2e"}, // object keys are raw
		{"file:///wh/default.db/%2e%2e%2f%2e%2e", ""},
		{"file:///wh/default.db/%2e%2e", ""},
		{"file:///wh/default.db/x%2f..%2f..", ""},
		{"file:///wh/default.db/%2E%2E/x", ""},
		{"/wh/default.db/../x", ""},
		{"/wh/./x", ""},
		{"/wh//x", ""},
		{"file:///wh/%00", ""},
		{"/wh/a\x00b", ""},
		{`/wh/a\..\b`, ""},
		{"file:///wh/%5c..%5cx", ""},
		{"file://otherhost/wh", ""},
		{"file:///wh/t?x=1", ""},
		{"file:///wh/t#frag", ""},
		{"file:wh/t", ""},
		{"wh/t", ""},
		{"s3:///key", ""},
		{"s3://bucket/wh/../x", ""},
	} {
		got, err := resolveLocation(tc.loc)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("resolveLocation(%q) = %s, want refused", tc.loc, got)
		case tc.want != "" && err != nil:
			t.Errorf("resolveLocation(%q): %v", tc.loc, err)
		case tc.want != "" && got.String() != tc.want:
			t.Errorf("resolveLocation(%q) = %s, want %s", tc.loc, got, tc.want)
		}
	}
	wh, _ := resolveLocation("file:///wh")
	for loc, in := range map[string]bool{"/wh/t": true, "/wh": false, "/wh2/t": false, "/other": false, "s3://wh/t": false} {
		l, err := resolveLocation(loc)
		if err != nil {
			t.Fatal(err)
		}
		if wh.contains(l) != in {
			t.Errorf("%s contains %s = %v", wh, l, !in)
		}
	}
}

// hostile are names a client may try for a path. The provider refuses
// each itself (it does not rely on the handlers).
var hostile = []string{
	"..", "../x", ".", "%2e%2e", "%2e%2e%2f", "%2e%2e%2f%2e%2e", "%252e%252e%252f", `..\x`, "%5c..",
	"%00", "a\x00b", "\u2024\u2024", "\uff0e\uff0e", "\u3002", "a b", `a"b`, "🦆", strings.Repeat("n", 300),
}

func openTemp(t *testing.T) (*Provider, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := OpenEmbedded(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, dir
}

// tree lists every file and directory under dir.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !strings.HasSuffix(p, "-journal") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

var oneColumn = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

func oneRow(t *testing.T) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, oneColumn)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

func TestHostileNamesTouchNothing(t *testing.T) {
	p, dir := openTemp(t)
	ctx := context.Background()
	before := tree(t, dir)
	forged := []catalogs.WriteReceipt{{Metadata: []byte(`{"format":"flightgw.iceberg.data-files/v1","files":[{"path":"` + dir + `/catalog.db"}]}`)}}
	for _, name := range hostile {
		for _, id := range []catalogs.TableIdent{
			{Catalog: "lake", Namespace: []string{"default"}, Name: name},
			{Catalog: "lake", Namespace: []string{name}, Name: "t"},
		} {
			ops := map[string]error{}
			_, ops["create"] = p.CreateTable(ctx, id, oneColumn, nil)
			_, ops["write"] = p.WriteBatch(ctx, id, oneRow(t))
			_, ops["stream"] = p.OpenStream(ctx, id, catalogs.WriteTxn{})
			ops["drop"] = p.DropTable(ctx, id)
			ops["discard"] = p.Discard(ctx, id, forged)
			_, ops["commit"] = p.Commit(ctx, id, forged)
			for op, err := range ops {
				if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), catalogs.AllowedNameChars) {
					t.Errorf("%s %q: %v, want invalid argument stating the rule", op, id.String(), err)
				}
			}
		}
	}
	if after := tree(t, dir); !slices.Equal(before, after) {
		t.Fatalf("hostile names changed %s:\nbefore %q\nafter  %q", dir, before, after)
	}
}

// register puts a table in the SQL catalog at loc, as another engine
// sharing the catalog (or an edit of its database) could.
func register(t *testing.T, p *Provider, name, loc string) catalogs.TableIdent {
	t.Helper()
	sc, err := icebergSchema(oneColumn, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.cat.CreateTable(context.Background(), table.Identifier{"default", name}, sc, catalog.WithLocation(loc)); err != nil {
		t.Fatal(err)
	}
	return catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: name}
}

// TestLocationOutsideTheWarehouseIsRefused: a table whose location lies
// outside the warehouse, plainly or once decoded, is neither written nor
// dropped: PermissionDenied naming the table, and no file changes.
func TestLocationOutsideTheWarehouseIsRefused(t *testing.T) {
	p, dir := openTemp(t)
	ctx := context.Background()
	wh := filepath.Join(dir, "warehouse")
	if err := os.MkdirAll(wh, 0o755); err != nil { // the decoded ".." needs it
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "outside", "keep.txt"), []byte("x"), 0o644); err == nil {
		t.Fatal("outside exists already")
	}
	for name, loc := range map[string]string{
		"plain":   "file://" + filepath.Join(dir, "outside"),
		"encoded": "file://" + wh + "/%2e%2e%2foutside2",
		"dotdot":  wh + "/../outside3",
	} {
		id := register(t, p, name, loc)
		before := tree(t, dir)
		ops := map[string]error{"drop": p.DropTable(ctx, id)}
		_, ops["write"] = p.WriteBatch(ctx, id, oneRow(t))
		_, ops["stream"] = p.OpenStream(ctx, id, catalogs.WriteTxn{})
		_, ops["spec"] = p.GetTableSpec(ctx, id)
		for op, err := range ops {
			if !errors.Is(err, catalogs.ErrPermissionDenied) || !strings.Contains(err.Error(), "lake.default."+name) {
				t.Errorf("%s of %s at %s: %v, want permission denied naming the table", op, name, loc, err)
			}
		}
		if err := ops["drop"]; name == "plain" && (err == nil || !strings.Contains(err.Error(), "outside the warehouse")) {
			t.Errorf("drop of %s: %v does not say the location is outside the warehouse", name, err)
		}
		if after := tree(t, dir); !slices.Equal(before, after) {
			t.Errorf("refused %s changed the data dir:\nbefore %q\nafter  %q", name, before, after)
		}
		if _, err := p.cat.LoadTable(ctx, table.Identifier{"default", name}); err != nil {
			t.Errorf("refused drop of %s dropped it: %v", name, err)
		}
	}
}

// TestDropStaysInsideItsOwnLocation: a table whose location is inside the
// warehouse but not its own (here its namespace's directory, holding
// another table) is dropped with its files left; a table at its own
// location is purged, and only there.
func TestDropStaysInsideItsOwnLocation(t *testing.T) {
	p, dir := openTemp(t)
	ctx := context.Background()
	wh := filepath.Join(dir, "warehouse")
	victim := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "victim"}
	for _, id := range []catalogs.TableIdent{victim, {Catalog: "lake", Namespace: []string{"default"}, Name: "victi"}} {
		if _, err := p.CreateTable(ctx, id, oneColumn, nil); err != nil {
			t.Fatal(err)
		}
		r, err := p.WriteBatch(ctx, id, oneRow(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
			t.Fatal(err)
		}
	}
	squatter := register(t, p, "squatter", "file://"+wh+"/default.db")
	before := tree(t, dir)
	if err := p.DropTable(ctx, squatter); err != nil {
		t.Fatalf("drop squatter: %v", err)
	}
	if after := tree(t, dir); !slices.Equal(before, after) {
		t.Fatalf("dropping a table at its namespace's directory deleted files:\nbefore %q\nafter  %q", before, after)
	}
	// victim at its own location: purged, and victi (a prefix of its
	// name) untouched.
	if err := p.DropTable(ctx, victim); err != nil {
		t.Fatal(err)
	}
	for _, f := range tree(t, dir) {
		if strings.HasPrefix(f, filepath.Join(wh, "default.db", "victim")+"/") && !isDir(f) {
			t.Errorf("purge left %s", f)
		}
	}
	if _, err := p.GetTableSpec(ctx, catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "victi"}); err != nil {
		t.Errorf("victi after victim's purge: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(wh, "default.db", "victi", "data", "*.parquet")); len(files) != 1 {
		t.Errorf("victi's data files after victim's purge: %v", files)
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// TestWritePathOutsideTheTableIsRefused: a table property sending data
// files outside the table's location stops every write.
func TestWritePathOutsideTheTableIsRefused(t *testing.T) {
	p, dir := openTemp(t)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "redirected"}
	if _, err := p.CreateTable(ctx, id, oneColumn, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := p.cat.LoadTable(ctx, table.Identifier{"default", "redirected"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(map[string]string{table.WriteDataPathKey: "file://" + dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	if _, err := p.WriteBatch(ctx, id, oneRow(t)); !errors.Is(err, catalogs.ErrPermissionDenied) || !strings.Contains(err.Error(), table.WriteDataPathKey) {
		t.Errorf("write with %s outside the table: %v, want permission denied naming the property", table.WriteDataPathKey, err)
	}
	if after := tree(t, dir); !slices.Equal(before, after) {
		t.Errorf("refused write changed files:\nbefore %q\nafter  %q", before, after)
	}
}
