package starrocks

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// config is a catalog's parsed properties.
type config struct {
	// fe are the FE HTTP base URLs (http:// or https://), tried in order.
	fe []*url.URL
	// mysql is the FE's MySQL-protocol address, host:port.
	mysql    string
	user     string
	password catalogs.Secret
	// databases maps a namespace (its one level) to a StarRocks database.
	// When it is empty a namespace is the database of its name; when it
	// is set it is every database the catalog reaches (see database).
	databases map[string]string
	// timeout bounds one HTTP call or one MySQL statement.
	timeout time.Duration
	// txnTimeout is the Stream Load transaction's timeout (begin header
	// "timeout"): a transaction not prepared by then is aborted by the FE.
	txnTimeout time.Duration
	// idleTimeout is idle_transaction_timeout (0: not sent).
	idleTimeout time.Duration
	// retries bounds the attempts of a call that is safe to repeat.
	retries int
	// breakerFailures consecutive failures open the breaker for
	// breakerOpen.
	breakerFailures uint32
	breakerOpen     time.Duration
	// replicationNum is the replication_num of the tables CreateTable
	// makes ("" leaves the cluster's default).
	replicationNum string
	// spoolDir holds the batches WriteBatch stages until their commit.
	spoolDir string
	tls      *tls.Config
}

// The catalog properties (docs/starrocks.md).
const (
	propFE          = "fe_http"
	propMySQL       = "mysql"
	propUser        = "user"
	propPassword    = "password"
	propDatabases   = "databases"
	propTxnTimeout  = "txn_timeout"
	propIdle        = "idle_txn_timeout"
	propReplication = "replication_num"
	propSpoolDir    = "spool_dir"
	propTLSCA       = "tls_ca_file"
	propTLSName     = "tls_server_name"
	propTLSInsecure = "tls_insecure_skip_verify"
)

var knownProps = map[string]bool{propFE: true, propMySQL: true, propUser: true, propPassword: true, propDatabases: true,
	propTxnTimeout: true, propIdle: true, propReplication: true, propSpoolDir: true, propTLSCA: true, propTLSName: true,
	propTLSInsecure: true}

// known reports whether k is a property of a starrocks catalog.
func known(k string) bool {
	_, alias := catalogs.ServiceAliases[k]
	return knownProps[k] || catalogs.RemoteKeys[k] || alias
}

func bad(key, format string, args ...any) error {
	return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %s", key, fmt.Sprintf(format, args...))
}

// parseConfig validates the properties; errors name the key, never the
// password's value.
func parseConfig(props map[string]string) (config, error) {
	c := config{databases: map[string]string{}, timeout: 60 * time.Second, txnTimeout: 600 * time.Second,
		retries: 3, breakerFailures: 5, breakerOpen: 30 * time.Second, spoolDir: os.TempDir()}
	for k := range props {
		if !known(k) {
			return c, bad(k, "unknown property of a starrocks catalog")
		}
	}
	for raw := range strings.SplitSeq(props[propFE], ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			// Not echoed: an address with user:password@ must not print.
			return c, bad(propFE, "address %d is not an http(s)://host:port address without credentials", len(c.fe)+1)
		}
		c.fe = append(c.fe, u)
	}
	if len(c.fe) == 0 {
		return c, bad(propFE, "at least one FE HTTP address is required")
	}
	if c.mysql = strings.TrimSpace(props[propMySQL]); c.mysql == "" || !strings.Contains(c.mysql, ":") {
		return c, bad(propMySQL, "the FE's MySQL address host:port is required")
	}
	if c.user = props[propUser]; c.user == "" {
		return c, bad(propUser, "a user is required")
	}
	c.password = catalogs.NewSecret(props[propPassword])
	for pair := range strings.SplitSeq(props[propDatabases], ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		ns, db, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(ns) == "" || strings.TrimSpace(db) == "" {
			return c, bad(propDatabases, "%q is not namespace=database", pair)
		}
		if isSystemDatabase(strings.TrimSpace(db)) {
			return c, bad(propDatabases, "%q is a StarRocks system database, which the gateway does not reach", strings.TrimSpace(db))
		}
		c.databases[strings.TrimSpace(ns)] = strings.TrimSpace(db)
	}
	var err error
	for _, d := range []struct {
		key string
		v   *time.Duration
	}{{propTxnTimeout, &c.txnTimeout}, {propIdle, &c.idleTimeout}} {
		if s := props[d.key]; s != "" {
			if *d.v, err = time.ParseDuration(s); err != nil || *d.v < 0 {
				return c, bad(d.key, "%q is not a duration", s)
			}
		}
	}
	if c.txnTimeout < time.Second {
		return c, bad(propTxnTimeout, "must be at least 1s")
	}
	// Timeouts, attempts and the breaker in every backend's dialect
	// (catalogs/remoteprops.go), the older spellings still read.
	rp, err := catalogs.ParseRemote(props, c.remotePolicy(), catalogs.ServiceAliases)
	if err != nil {
		return c, err
	}
	c.timeout, c.retries, c.breakerFailures, c.breakerOpen = rp.Timeout, rp.Attempts, rp.BreakerFailures, rp.BreakerOpen
	if s := props[propReplication]; s != "" {
		if n, err := strconv.Atoi(s); err != nil || n < 1 {
			return c, bad(propReplication, "%q is not a positive number", s)
		}
		c.replicationNum = s
	}
	if s := props[propSpoolDir]; s != "" {
		c.spoolDir = s
	}
	if c.tls, err = tlsConfig(props); err != nil {
		return c, err
	}
	return c, nil
}

// tlsConfig is the TLS to the FE (https:// addresses): a CA file, a server
// name, or (for tests only) no verification.
func tlsConfig(props map[string]string) (*tls.Config, error) {
	ca, name, insecure := props[propTLSCA], props[propTLSName], props[propTLSInsecure]
	if ca == "" && name == "" && insecure == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: name}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, bad(propTLSCA, "%v", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, bad(propTLSCA, "%s holds no PEM certificate", ca)
		}
	}
	if insecure != "" {
		v, err := strconv.ParseBool(insecure)
		if err != nil {
			return nil, bad(propTLSInsecure, "%q is not a boolean", insecure)
		}
		t.InsecureSkipVerify = v
	}
	return t, nil
}

// systemDatabases are the databases StarRocks keeps for itself (its
// information_schema and sys, the optimizer's statistics, the audit log
// of every user's statements as the AuditLoader plugin and managed
// clusters name it) and those of MySQL that its protocol, or a MySQL
// server in its place, answers for. Lower case: they are matched ignoring
// case, since a cluster may run with case-insensitive names.
var systemDatabases = map[string]bool{
	"information_schema": true, "sys": true, "_statistics_": true,
	"starrocks_audit_db__": true, "_starrocks_audit_db_": true,
	"mysql": true, "performance_schema": true,
}

// isSystemDatabase reports whether db is one of systemDatabases.
func isSystemDatabase(db string) bool { return systemDatabases[strings.ToLower(db)] }

// database is the StarRocks database of a table's namespace. It is the
// one gate of every access (metadata, DDL, scans, pushed-down queries,
// loads and their commits): a system database is PermissionDenied, and
// when the databases property is set a namespace it does not map does
// not exist in the catalog (NotFound, so that the gateway's resolver
// still matches a namespace written in another case).
func (c config) database(t catalogs.TableIdent) (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	if len(t.Namespace) != 1 {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a starrocks namespace has one level (the database), not %d", t, len(t.Namespace))
	}
	ns := t.Namespace[0]
	db, ok := c.databases[ns]
	switch {
	case !ok && len(c.databases) > 0:
		return "", catalogs.Errorf(catalogs.ErrNotFound, "table %s: namespace %s is not one of catalog %q's databases (property %s)", t, ns, t.Catalog, propDatabases)
	case !ok:
		db = ns
	}
	if isSystemDatabase(db) {
		return "", catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: database %s is a StarRocks system database, which the gateway does not reach", t, db)
	}
	return db, nil
}

// namespacesOf are the namespaces a StarRocks database is listed under:
// the database's own name without a databases property, else the
// namespaces the property maps to it (none for another database).
func (c config) namespacesOf(db string) []string {
	if isSystemDatabase(db) {
		return nil
	}
	if len(c.databases) == 0 {
		return []string{db}
	}
	var out []string
	for ns, d := range c.databases {
		if d == db {
			out = append(out, ns)
		}
	}
	return out
}

// remotePolicy is the policy of the calls to the FE (catalogs.Remote).
func (c config) remotePolicy() catalogs.RemotePolicy {
	return catalogs.RemotePolicy{Timeout: c.timeout, Attempts: c.retries,
		BreakerFailures: c.breakerFailures, BreakerOpen: c.breakerOpen}
}
