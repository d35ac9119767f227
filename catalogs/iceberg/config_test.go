package iceberg

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

func TestParseConfigRejectsBadKeys(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{PropURI: "sqlite:///tmp/x.db", PropWarehouse: "file:///tmp/wh"}
	}
	cases := []struct {
		name, key, value string
	}{
		{"unknown key", "colour", "blue"},
		{"misspelt remote key", "remote.timeout", "10"},
		{"misspelt retry key", "commit.retry.attempts", "3"},
		{"catalog type", PropCatalogType, "hive"},
		{"relative warehouse", PropWarehouse, "file://relative"},
		{"warehouse scheme", PropWarehouse, "gs://bucket/x"},
		{"target size", PropTargetFileSize, "big"},
		{"tiny target size", PropTargetFileSize, "10"},
		{"retries", lake.PropCommitRetries, "-1"},
		{"timeout", lake.PropRemoteTimeout, "0"},
		{"namespace", PropCreateNamespaces, "a..b"},
		{"uri", PropURI, ""},
		{"group enabled", PropCommitGroupEnabled, "sometimes"},
		{"group members", PropCommitGroupMaxMembers, "0"},
		{"misspelt group key", "commit.group.size", "3"},
		{"metadata cache bytes", PropMetadataCacheBytes, "-1"},
		{"metadata cache bytes, a size", PropMetadataCacheBytes, "16mb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			props := base()
			props[c.key] = c.value
			_, err := parseConfig(props)
			if !errors.Is(err, catalogs.ErrInvalidArgument) {
				t.Fatalf("parseConfig(%s=%q) = %v, want ErrInvalidArgument", c.key, c.value, err)
			}
			if !strings.Contains(err.Error(), c.key) {
				t.Errorf("error %q does not name %q", err, c.key)
			}
		})
	}
}

func TestParseConfigGroup(t *testing.T) {
	base := map[string]string{PropURI: "sqlite:///tmp/x.db", PropWarehouse: "file:///tmp/wh"}
	cfg, err := parseConfig(base)
	if err != nil || !cfg.group.enabled || cfg.group.maxMembers != 1000 {
		t.Fatalf("defaults: %+v, %v; want group commit on, 1000 members", cfg.group, err)
	}
	base[PropCommitGroupEnabled], base[PropCommitGroupMaxMembers] = "false", "7"
	cfg, err = parseConfig(base)
	if err != nil || cfg.group.enabled || cfg.group.maxMembers != 7 {
		t.Fatalf("group off, 7: %+v, %v", cfg.group, err)
	}
	if _, ok := cfg.passthrough[PropCommitGroupEnabled]; ok {
		t.Error("commit.group.enabled is passed to iceberg-go")
	}
}

// TestParseConfigMetadataCache: metadata-cache.max-bytes defaults to
// DefaultMetadataCacheBytes, takes 0 (off), and stays the gateway's.
func TestParseConfigMetadataCache(t *testing.T) {
	base := map[string]string{PropURI: "sqlite:///tmp/x.db", PropWarehouse: "file:///tmp/wh"}
	for _, c := range []struct {
		value string
		want  int64
	}{{"", DefaultMetadataCacheBytes}, {"0", 0}, {"1048576", 1 << 20}} {
		if c.value != "" {
			base[PropMetadataCacheBytes] = c.value
		}
		cfg, err := parseConfig(base)
		if err != nil || cfg.metaCacheBytes != c.want {
			t.Errorf("%s=%q: %d, %v; want %d", PropMetadataCacheBytes, c.value, cfg.metaCacheBytes, err, c.want)
		}
		if _, ok := cfg.passthrough[PropMetadataCacheBytes]; ok {
			t.Errorf("%s is passed to iceberg-go", PropMetadataCacheBytes)
		}
	}
}

func TestParseConfigRESTAndWaits(t *testing.T) {
	_, err := parseConfig(map[string]string{PropCatalogType: "rest", PropURI: "ftp://x"})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), PropURI) {
		t.Errorf("rest with ftp uri: %v", err)
	}
	_, err = parseConfig(map[string]string{PropCatalogType: "rest", PropURI: "http://x", PropCredential: "nocolon"})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), PropCredential) {
		t.Errorf("credential without colon: %v", err)
	}
	cfg, err := parseConfig(map[string]string{PropCatalogType: "rest", PropURI: "https://cat:8181", PropToken: "t",
		lake.PropCommitMinWait: "5", lake.PropCommitMaxWait: "50", "s3.region": "eu-west-1", PropCreateNamespaces: "a, b.c"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.commit.MinWait != 5*time.Millisecond || cfg.commit.MaxWait != 50*time.Millisecond {
		t.Errorf("waits = %v, %v", cfg.commit.MinWait, cfg.commit.MaxWait)
	}
	if cfg.passthrough["s3.region"] != "eu-west-1" || cfg.passthrough[PropToken] != "t" {
		t.Errorf("passthrough = %v", cfg.passthrough)
	}
	if _, ok := cfg.passthrough[lake.PropCommitMinWait]; ok {
		t.Errorf("commit retry keys leak into iceberg-go properties: %v", cfg.passthrough)
	}
	if len(cfg.createNamespaces) != 2 || strings.Join(cfg.createNamespaces[1], ".") != "b.c" {
		t.Errorf("namespaces = %v", cfg.createNamespaces)
	}
	_, err = parseConfig(map[string]string{PropURI: "sqlite:///x", PropWarehouse: "/x", lake.PropCommitMinWait: "100", lake.PropCommitMaxWait: "10"})
	if !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("min wait above max wait: %v", err)
	}
}

func TestEmbeddedProperties(t *testing.T) {
	props, err := EmbeddedProperties("/var/lib/flightgw")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		PropCatalogType:      "sql",
		PropURI:              "sqlite:////var/lib/flightgw/catalog.db",
		PropWarehouse:        "file:///var/lib/flightgw/warehouse",
		PropCreateNamespaces: "default",
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
	if _, err := parseConfig(props); err != nil {
		t.Errorf("embedded properties do not parse: %v", err)
	}
	// By its characters, as the IO and every other reader read a file URL
	// (it was "my%20data", a directory of another name to them).
	if props, err := EmbeddedProperties("/home/me/my data é"); err != nil || props[PropWarehouse] != "file:///home/me/my data é/warehouse" {
		t.Errorf("warehouse of a data dir with a space: %q, %v", props[PropWarehouse], err)
	}
	for _, dir := range []string{"/x/100%", "/x/a#b", "/x/a?b"} {
		if _, err := EmbeddedProperties(dir); !errors.Is(err, catalogs.ErrInvalidArgument) {
			t.Errorf("data dir %q: %v, want InvalidArgument", dir, err)
		}
	}
}

func TestSQLTarget(t *testing.T) {
	cases := []struct{ uri, driver, dialect, dsnPrefix string }{
		{"sqlite:////data/catalog.db", "sqliteshim", "sqlite", "file:/data/catalog.db?"},
		{"sqlite:///data/catalog.db", "sqliteshim", "sqlite", "file:/data/catalog.db?"},
		{"postgresql://u:p@db:5432/lake", "pg", "postgres", "postgres://u:p@db:5432/lake"},
	}
	for _, c := range cases {
		d, dsn, dia, err := sqlTarget(c.uri)
		if err != nil || d != c.driver || dia != c.dialect || !strings.HasPrefix(dsn, c.dsnPrefix) {
			t.Errorf("sqlTarget(%q) = %q, %q, %q, %v", c.uri, d, dsn, dia, err)
		}
	}
	for _, bad := range []string{"mysql://x", "sqlite://rel", "sqlite:///x.db?mode=ro"} {
		if _, _, _, err := sqlTarget(bad); !errors.Is(err, catalogs.ErrInvalidArgument) {
			t.Errorf("sqlTarget(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	for attempt := range 40 {
		d := catalogs.Backoff(attempt, 10*time.Millisecond, time.Second)
		if d < 10*time.Millisecond || d > time.Second {
			t.Fatalf("backoff(%d) = %v outside [10ms, 1s]", attempt, d)
		}
	}
}
