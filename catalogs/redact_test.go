package catalogs

import "testing"

func TestRedactURI(t *testing.T) {
	for in, want := range map[string]string{
		"sqlite:///var/lib/flightgw/catalog.db":              "sqlite:///var/lib/flightgw/catalog.db",
		"/data/catalog.db":                                   "/data/catalog.db",
		"postgres://bob:s3cret@db:5432/lake?sslmode=disable": "postgres://bob:xxxxx@db:5432/lake?sslmode=disable",
		"postgres://db/lake?user=bob&password=s3cret":        "postgres://db/lake?password=xxxxx&user=bob",
		"host=db user=bob password=s3cret dbname=lake":       "host=db user=bob password=xxxxx dbname=lake",
		"host=db password='s 3' dbname=lake":                 "host=db password=xxxxx dbname=lake",
		"file:/data/c.db?_pragma=busy_timeout(5000)":         "file:/data/c.db?_pragma=busy_timeout(5000)",
	} {
		if got := RedactURI(in); got != want {
			t.Errorf("RedactURI(%q) = %q, want %q", in, got, want)
		}
	}
}
