package integration

import (
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
)

// TestInformationSchema: information_schema.schemata, tables, columns and
// views are the gateway's own, over the catalogs of the caller's realm
// only, and ordinary SQL filters, joins and sorts them.
func TestInformationSchema(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, realmConfig(t))
	alice := g.adbcConn(t, map[string]string{adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "alice-pw"})
	bob := g.adbcConn(t, map[string]string{adbc.OptionKeyUsername: "bob", adbc.OptionKeyPassword: "bob-pw"})
	for _, name := range []string{"orders", "customers"} {
		if _, err := ingest(t, alice, name, adbc.OptionValueIngestModeCreate, people(t, 0, 2),
			adbc.OptionValueIngestTargetCatalog, "salesdb"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ingest(t, bob, "secrets", adbc.OptionValueIngestModeCreate, people(t, 0, 1),
		adbc.OptionValueIngestTargetCatalog, "opsdb"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cnxn adbc.Connection
		q    string
		want []string
	}{
		{alice, `SELECT catalog_name, schema_name FROM information_schema.schemata`, []string{"salesdb|default"}},
		{alice, `SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables ORDER BY table_name`,
			[]string{"salesdb|default|customers|BASE TABLE", "salesdb|default|orders|BASE TABLE"}},
		{bob, `SELECT table_catalog || '.' || table_name FROM INFORMATION_SCHEMA.TABLES`, []string{"opsdb.secrets"}},
		{alice, `SELECT count(*) FROM information_schema.tables WHERE table_catalog = 'opsdb'`, []string{"0"}},
		{alice, `SELECT column_name, ordinal_position, data_type, is_nullable, numeric_precision FROM information_schema.columns
			WHERE table_schema = 'default' AND table_name = 'orders' ORDER BY ordinal_position`,
			[]string{"id|1|BIGINT|NO|19", "name|2|VARCHAR|YES|(null)", "score|3|DOUBLE|YES|53"}},
		{alice, `SELECT t.table_name, count(c.column_name) FROM salesdb.information_schema.tables t
			JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name
			GROUP BY t.table_name ORDER BY 1`, []string{"customers|3", "orders|3"}},
		{alice, `SELECT o.name, (SELECT count(*) FROM information_schema.tables) FROM salesdb."default".orders o ORDER BY 1`,
			[]string{"p0|2", "p1|2"}},
		{alice, `SELECT count(*) FROM information_schema.views`, []string{"0"}},
	}
	for _, c := range cases {
		got, err := queryRows(t, c.cnxn, c.q, nil)
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s:\n got %q, %v\nwant %q", c.q, got, err, c.want)
		}
	}
	// Another realm's catalog, named, does not exist; neither do DuckDB's
	// other information_schema views.
	_, err := queryRows(t, alice, `SELECT * FROM opsdb.information_schema.tables`, nil)
	assertADBC(t, err, adbc.StatusNotFound, "opsdb.information_schema.tables")
	_, err = queryRows(t, alice, `SELECT * FROM information_schema.table_constraints`, nil)
	assertADBC(t, err, adbc.StatusUnauthorized, "information_schema.table_constraints")
}
