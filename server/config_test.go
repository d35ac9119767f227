package server

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "flightgw.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsAreEmbedded(t *testing.T) {
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != DefaultListen || len(cfg.Catalogs) != 1 || cfg.Catalogs[0].Name != "lake" || cfg.DefaultCatalog != "lake" {
		t.Fatalf("defaults = %+v", cfg)
	}
	if !strings.HasSuffix(cfg.Catalogs[0].Properties["uri"], "/data/catalog.db") {
		t.Fatalf("embedded uri = %q", cfg.Catalogs[0].Properties["uri"])
	}
}

func TestFullConfig(t *testing.T) {
	t.Setenv("SECRET_KEY", "from-env")
	p := writeConfig(t, `
listen: 0.0.0.0:9999
log: {level: debug, format: json}
catalogs:
  - name: prod
    type: iceberg
    realm: sales
    properties: {catalog-type: rest, uri: "http://127.0.0.1:8181"}
auth:
  enabled: true
  signing_key: ${SECRET_KEY}
  users: [{name: alice, password_hash: "$2a$10$abcdefghijklmnopqrstuuG0ZfBm/XGQXvG1bO0/3kHGoukrDJwyK"}]
  tokens: [{name: etl, realm: sales, sha256: 2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b}]
  token_ttl: 30m
limits: {max_batch_bytes: 134217728}
timeouts: {txn_idle: 2m, shutdown_grace: 5s}
`)
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.Users[0].PasswordHash != "$2a$10$abcdefghijklmnopqrstuuG0ZfBm/XGQXvG1bO0/3kHGoukrDJwyK" {
		t.Fatalf("bcrypt hash mangled: %q", cfg.Auth.Users[0].PasswordHash)
	}
	if cfg.Auth.SigningKey != "from-env" || cfg.Auth.TokenTTL.Duration != 30*time.Minute || cfg.Timeouts.TxnIdle.Duration != 2*time.Minute ||
		cfg.Catalogs[0].Realm != "sales" || cfg.DefaultCatalog != "prod" || cfg.Limits.MaxBatchBytes != 128<<20 {
		t.Fatalf("parsed = %+v", cfg)
	}
}

func TestEnvOverrides(t *testing.T) {
	t.Setenv("FLIGHTGW_LISTEN", "127.0.0.1:1")
	t.Setenv("FLIGHTGW_TXN_IDLE_TIMEOUT", "90s")
	t.Setenv("FLIGHTGW_STATEMENT_TIMEOUT", "5m")
	t.Setenv("FLIGHTGW_CLUSTER_PEERS", "gw-0.gw:32010, gw-1.gw:32010")
	cfg, err := LoadConfig(writeConfig(t, "listen: 127.0.0.1:2\ntimeouts: {statement: 30s}\ncluster: {peers: [\"x:1\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:1" || cfg.Timeouts.TxnIdle.Duration != 90*time.Second || cfg.Timeouts.Statement.Duration != 5*time.Minute {
		t.Fatalf("env not applied: %+v", cfg)
	}
	if !slices.Equal(cfg.Cluster.Peers, []string{"gw-0.gw:32010", "gw-1.gw:32010"}) {
		t.Fatalf("FLIGHTGW_CLUSTER_PEERS gave %q", cfg.Cluster.Peers)
	}
}

func TestBadConfigNamesKey(t *testing.T) {
	for body, want := range map[string]string{
		"lisen: x\n":                         "lisen",
		"limits:\n  max_batch_bytes: lots\n": "line 2: limits.max_batch_bytes",
		"catalogs:\n  - name: a\n    type: iceberg\n    properties: 3\n": "line 4: catalogs[0].properties",
		"limits: 5\n":                      "line 1: limits",
		"log: {level: loud}\n":             "log.level",
		"catalogs: [{name: a}]\n":          "catalogs[0].type",
		"limits: {max_batch_bytes: 10}\n":  "limits.max_batch_bytes",
		"limits: {max_action_bytes: 10}\n": "limits.max_action_bytes",
		"limits: {max_batch_bytes: 1048576, max_action_bytes: 2097152}\n": "limits.max_action_bytes",
		"limits: {max_action_bytes: 1048576, action_memory: 1048576}\n":   "limits.action_memory",
		"default_catalog: nope\n":                                              "default_catalog",
		"timeouts: {txn_idle: banana}\n":                                       "txn_idle",
		"timeouts: {statement: -3s}\n":                                         "timeouts.statement",
		"auth: {users: [{name: a, password_hash: x}]}\n":                       "auth.users[0].password_hash",
		"debug: {pprof_listen: \"0.0.0.0:6060\"}\n":                            "debug.pprof_listen",
		"cluster: {peers: [gw-1]}\n":                                           "cluster.peers[0]",
		"cluster: {peers: [\"gw-1:1\", \"gw-2:0\"]}\n":                         "cluster.peers[1]",
		"cluster: {peer_timeout: soon}\n":                                      "cluster.peer_timeout",
		"cluster: {advertise: gw-1}\n":                                         "cluster.advertise",
		"cluster: {advertise: \"gw-1:32010\"}\n":                               "tickets.signing_key",
		"health: {listen: nope}\n":                                             "health.listen",
		"engine: {result_compression: gzip}\n":                                 "engine.result_compression",
		"tls: {cert_file: a.pem}\n":                                            "tls.key_file",
		"tls: {client_ca_file: ca.pem}\n":                                      "tls.client_ca_file",
		"tls: {cert_file: /nonexistent/a.pem, key_file: /nonexistent/a.key}\n": "tls.cert_file",
	} {
		_, err := LoadConfig(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want mention of %s", body, err, want)
		}
	}
	t.Setenv("FLIGHTGW_INSECURE", "maybe")
	if _, err := LoadConfig(""); err == nil || !strings.Contains(err.Error(), "FLIGHTGW_INSECURE") {
		t.Errorf("bad env: %v", err)
	}
}

func TestExposureRule(t *testing.T) {
	for _, tc := range []struct {
		addr           string
		auth, insecure bool
		ok             bool
	}{
		{"127.0.0.1:1", false, false, true},
		{"localhost:1", false, false, true},
		{"[::1]:1", false, false, true},
		{"0.0.0.0:1", false, false, false},
		{"0.0.0.0:1", true, false, true},
		{"0.0.0.0:1", false, true, true},
		{":1", false, false, false},
	} {
		if err := checkExposure(tc.addr, tc.auth, tc.insecure); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

func TestFairnessConfig(t *testing.T) {
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Limits; l.PerPrincipalWrites != DefaultMaxConcurrentWrites/2 || l.PerPrincipalQueries != DefaultMaxConcurrentQueries/2 ||
		l.PreparedPerSession != DefaultPreparedPerSession || cfg.Timeouts.StreamIdle.Duration != DefaultStreamIdle {
		t.Fatalf("defaults: %+v %v", l, cfg.Timeouts.StreamIdle)
	}
	t.Setenv("FLIGHTGW_PER_PRINCIPAL_QUERIES", "3")
	t.Setenv("FLIGHTGW_STREAM_IDLE_TIMEOUT", "500ms")
	cfg, err = LoadConfig(writeConfig(t, "limits: {max_concurrent_writes: 1, prepared_per_session: 7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Limits; l.PerPrincipalWrites != 1 || l.PerPrincipalQueries != 3 || l.PreparedPerSession != 7 || cfg.Timeouts.StreamIdle.Duration != 500*time.Millisecond {
		t.Fatalf("set: %+v %v", l, cfg.Timeouts.StreamIdle)
	}
	t.Setenv("FLIGHTGW_STREAM_IDLE_TIMEOUT", "10ms")
	_, err = LoadConfig(writeConfig(t, "limits: {max_concurrent_writes: 2, per_principal_writes: 3}\n"))
	if err == nil || !containsAll(err.Error(), "limits.per_principal_writes: 3", "timeouts.stream_idle: 10ms") {
		t.Fatalf("invalid: %v", err)
	}
}

// TestCommitMessagesTTL: commit_messages.ttl defaults to half of
// reclaim.min_age, is read from the file and the environment, and is
// refused at or above reclaim.min_age unless the reclaimer is off.
func TestCommitMessagesTTL(t *testing.T) {
	for _, c := range []struct {
		body, env string
		want      time.Duration
		err       string
	}{
		{body: "listen: 127.0.0.1:0\n", want: 12 * time.Hour},
		{body: "reclaim: {min_age: 6h}\n", want: 3 * time.Hour},
		{body: "commit_messages: {ttl: 2h}\n", want: 2 * time.Hour},
		{body: "commit_messages: {ttl: 2h}\n", env: "90m", want: 90 * time.Minute},
		{body: "commit_messages: {ttl: 24h}\n", err: "commit_messages.ttl: 24h0m0s is not below reclaim.min_age (24h0m0s)"},
		{body: "reclaim: {min_age: 1h}\ncommit_messages: {ttl: 2h}\n", err: "not below reclaim.min_age"},
		{body: "commit_messages: {ttl: 1h}\n", env: "48h", err: "commit_messages.ttl"},
		{body: "commit_messages: {ttl: soon}\n", err: "commit_messages.ttl"},
		{body: "commit_messages: {ttl: -1h}\n", err: "commit_messages.ttl: negative"},
		{body: "listen: 127.0.0.1:0\n", env: "later", err: "FLIGHTGW_COMMIT_MESSAGES_TTL"},
		// Without the reclaimer nothing deletes the staged files.
		{body: "reclaim: {interval: 0}\ncommit_messages: {ttl: 48h}\n", want: 48 * time.Hour},
	} {
		t.Run("", func(t *testing.T) {
			if c.env != "" {
				t.Setenv("FLIGHTGW_COMMIT_MESSAGES_TTL", c.env)
			}
			cfg, err := LoadConfig(writeConfig(t, c.body))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%q (env %q): err = %v, want mention of %q", c.body, c.env, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q (env %q): %v", c.body, c.env, err)
			}
			if got := cfg.CommitMessages.TTL.Duration; got != c.want {
				t.Fatalf("%q (env %q): ttl %v, want %v", c.body, c.env, got, c.want)
			}
		})
	}
}

// TestActionLimitsDefaults: the action bounds default to 64 MiB (or
// max_batch_bytes, when smaller) and 1 GiB (at least four bodies of the
// largest size), and the environment sets them.
func TestActionLimitsDefaults(t *testing.T) {
	cfg, err := LoadConfig(writeConfig(t, "limits: {max_batch_bytes: 2097152}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.MaxActionBytes != 2<<20 || cfg.Limits.ActionMemory != 1<<30 {
		t.Errorf("defaults with max_batch_bytes 2 MiB: %d, %d", cfg.Limits.MaxActionBytes, cfg.Limits.ActionMemory)
	}
	t.Setenv("FLIGHTGW_MAX_ACTION_BYTES", "1048576")
	t.Setenv("FLIGHTGW_ACTION_MEMORY", "8388608")
	if cfg, err = LoadConfig(""); err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.MaxActionBytes != 1<<20 || cfg.Limits.ActionMemory != 8<<20 {
		t.Errorf("from the environment: %d, %d", cfg.Limits.MaxActionBytes, cfg.Limits.ActionMemory)
	}
}

// TestEnvVarsListed: every FLIGHTGW_ variable the server's sources (and
// flightgw-server's) name is one of EnvVars, the table applyEnv reads and
// flightgw serve --help lists, but for the crash hook of the tests; and
// every one of EnvVars is read from the environment.
func TestEnvVarsListed(t *testing.T) {
	listed := map[string]bool{}
	for _, k := range EnvVars {
		listed[k] = true
	}
	name := regexp.MustCompile(`FLIGHTGW_[A-Z0-9_]+`)
	for _, glob := range []string{"*.go", "../cmd/flightgw-server/*.go"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range name.FindAllString(string(b), -1) {
				if !listed[k] && k != CrashAfterCommitEnv {
					t.Errorf("%s names %s, which EnvVars (the environment table, serve --help) does not list", f, k)
				}
			}
		}
	}
	read := map[string]bool{}
	var c Config
	if err := c.applyEnv(func(k string) (string, bool) { read[k] = true; return "", false }); err != nil {
		t.Fatal(err)
	}
	for _, k := range EnvVars {
		if !read[k] {
			t.Errorf("EnvVars lists %s, which the config does not read", k)
		}
	}
}
