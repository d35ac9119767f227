package engine

import "testing"

func TestQuoteQualifiers(t *testing.T) {
	reserved := map[string]bool{"default": true, "order": true, "end": true, "left": true}
	cases := []struct{ in, want string }{
		{`SELECT * FROM default.people`, `SELECT * FROM "default".people`},
		{`SELECT * FROM Default . "People"`, `SELECT * FROM "Default" . "People"`},
		{`SELECT default.people.id FROM default.people`, `SELECT "default".people.id FROM "default".people`},
		{`SELECT default.* FROM order.t JOIN left.u ON true`, `SELECT "default".* FROM "order".t JOIN "left".u ON true`},
		// Already a name, or not a qualifier: left alone.
		{`SELECT * FROM lake.default.people`, ``},
		{`SELECT * FROM "default".people`, ``},
		{`INSERT INTO t VALUES (DEFAULT, 1.5)`, ``},
		{`SELECT 'default.people', E'it\'s default.x', $$default.y$$, $t$default.z$t$`, ``},
		{`SELECT 1 -- default.people` + "\n" + `/* order.t */`, ``},
		{`SELECT x_default.y, defaults.z, default.1`, ``},
	}
	for _, c := range cases {
		got, ok := quoteQualifiers(c.in, reserved)
		want := c.want
		if want == "" {
			want = c.in
		}
		if got != want || ok != (c.want != "") {
			t.Errorf("quoteQualifiers(%q) = %q, %v; want %q", c.in, got, ok, want)
		}
	}
}
