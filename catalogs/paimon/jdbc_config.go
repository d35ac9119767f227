package paimon

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// Properties of the JDBC metastore, spelled as Paimon's catalog options
// (CatalogOptions, JdbcCatalogOptions), so that one set of options opens
// the same catalog in the gateway and in Paimon Java.
const (
	// PropMetastore selects the catalog: "filesystem" (the default) or
	// "jdbc", Paimon's JdbcCatalog: databases and tables are rows of
	// Paimon's tables in SQLite or PostgreSQL, table metadata and data
	// stay in the warehouse as the filesystem catalog lays them out.
	PropMetastore = "metastore"
	// PropURI is the JDBC metastore's database: jdbc:sqlite:/abs/file.db
	// or sqlite:///abs/file.db, jdbc:postgresql://host:port/db or
	// postgres://user:pw@host:port/db.
	PropURI = "uri"
	// PropCatalogKey tells apart the catalogs that share one database
	// (the catalog_key column); Paimon's default is "jdbc".
	PropCatalogKey = "catalog-key"
	// PropJDBCUser and PropJDBCPassword are the database credentials, as
	// Paimon passes jdbc.* options to the JDBC driver.
	PropJDBCUser     = "jdbc.user"
	PropJDBCPassword = "jdbc.password"
	// PropLockEnabled takes Paimon's distributed lock (a row of
	// paimon_distributed_locks) around table creation and every snapshot
	// write. Paimon's default: on for an object store (S3), off for local
	// files.
	PropLockEnabled = "lock.enabled"
	// PropLockAcquireTimeout bounds the wait for the lock; it is also the
	// age past which a held lock counts as abandoned (Paimon: 8 min).
	PropLockAcquireTimeout = "lock-acquire-timeout"
	// PropLockCheckMaxSleep caps the backoff between lock attempts
	// (Paimon: 8 s).
	PropLockCheckMaxSleep = "lock-check-max-sleep"
	// PropLockKeyMaxLength is the width of the lock table's key column
	// when this gateway creates it (Paimon: 255).
	PropLockKeyMaxLength = "lock-key-max-length"
	// PropSyncAllProperties copies every table's options into
	// paimon_table_properties (Paimon 1.4: true).
	PropSyncAllProperties = "sync-all-properties"
	// PropClientPoolSize bounds the open database connections (Paimon:
	// 2).
	PropClientPoolSize = "client-pool-size"
)

// Values of PropMetastore.
const (
	MetastoreFilesystem = "filesystem"
	MetastoreJDBC       = "jdbc"
)

var jdbcKeys = map[string]bool{
	PropURI: true, PropCatalogKey: true, PropJDBCUser: true, PropJDBCPassword: true,
	PropLockEnabled: true, PropLockAcquireTimeout: true, PropLockCheckMaxSleep: true,
	PropLockKeyMaxLength: true, PropSyncAllProperties: true, PropClientPoolSize: true,
}

// jdbcConfig is the validated JDBC metastore configuration.
type jdbcConfig struct {
	driver, dsn      string
	dialect          string // dialectSQLite or dialectPostgres
	catalogKey       string
	lock             bool
	acquireTimeout   time.Duration
	checkMaxSleep    time.Duration
	lockKeyMaxLength int
	syncProperties   bool
	poolSize         int
	warehouse        string // as configured: the prefix of database locations
}

const (
	dialectSQLite   = "sqlite"
	dialectPostgres = "postgres"
)

// parseJDBCConfig reads the JDBC metastore's properties; objectStore is
// whether the warehouse is on S3 (the default of lock.enabled).
func parseJDBCConfig(props map[string]string, objectStore bool) (*jdbcConfig, error) {
	c := &jdbcConfig{catalogKey: "jdbc", lock: objectStore, acquireTimeout: 8 * time.Minute,
		checkMaxSleep: 8 * time.Second, lockKeyMaxLength: 255, syncProperties: true, poolSize: 2,
		warehouse: props[PropWarehouse]}
	var err error
	if c.driver, c.dsn, c.dialect, err = jdbcTarget(props[PropURI], props[PropJDBCUser], props[PropJDBCPassword]); err != nil {
		return nil, err
	}
	if k, ok := props[PropCatalogKey]; ok {
		if k == "" || len(k) > 255 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: must be 1 to 255 bytes", PropCatalogKey)
		}
		c.catalogKey = k
	}
	bools := []struct {
		key string
		dst *bool
	}{{PropLockEnabled, &c.lock}, {PropSyncAllProperties, &c.syncProperties}}
	for _, b := range bools {
		if s, ok := props[b.key]; ok {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not true or false", b.key, s)
			}
			*b.dst = v
		}
	}
	durs := []struct {
		key string
		dst *time.Duration
	}{{PropLockAcquireTimeout, &c.acquireTimeout}, {PropLockCheckMaxSleep, &c.checkMaxSleep}}
	for _, d := range durs {
		if s, ok := props[d.key]; ok {
			v, err := parseDuration(s)
			if err != nil || v < time.Millisecond {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not a duration of at least 1 ms (as Paimon spells them: 500 ms, 30 s, 8 min)", d.key, s)
			}
			*d.dst = v
		}
	}
	ints := []struct {
		key      string
		min, max int
		dst      *int
	}{{PropLockKeyMaxLength, 64, 4096, &c.lockKeyMaxLength}, {PropClientPoolSize, 1, 1024, &c.poolSize}}
	for _, n := range ints {
		if s, ok := props[n.key]; ok {
			v, err := strconv.Atoi(s)
			if err != nil || v < n.min || v > n.max {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %q is not an integer in [%d, %d]", n.key, s, n.min, n.max)
			}
			*n.dst = v
		}
	}
	return c, nil
}

// jdbcTarget turns the metastore uri into a database/sql driver, DSN and
// dialect. It accepts Paimon Java's JDBC URLs and the spellings the
// Iceberg backend's SQL catalog takes, and never quotes the uri in an
// error (it may hold a password).
func jdbcTarget(uri, user, password string) (driver, dsn, dialect string, err error) {
	switch {
	case uri == "":
		return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: required with metastore jdbc", PropURI)
	case strings.HasPrefix(uri, "jdbc:sqlite:"), strings.HasPrefix(uri, "sqlite:///"):
		path := strings.TrimPrefix(strings.TrimPrefix(uri, "jdbc:sqlite:"), "sqlite://")
		path = strings.TrimPrefix(path, "file:")
		for strings.HasPrefix(path, "//") {
			path = path[1:]
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") {
			return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: a sqlite database is an absolute path without a query (jdbc:sqlite:/abs/file.db)", PropURI)
		}
		if user != "" || password != "" {
			return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: sqlite takes no credentials", PropJDBCUser)
		}
		// Writers wait for each other instead of failing with SQLITE_BUSY,
		// and the database is switched to WAL (which persists in the
		// file): Paimon Java 1.4.2's JdbcCatalog leaves the cursors of its
		// table checks open, and in the rollback journal their read locks
		// make its own lock writes fail with SQLITE_BUSY once the tables
		// exist (make paimon-jdbc-check); in WAL readers block no writer.
		return "sqliteshim", "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)", dialectSQLite, nil
	case strings.HasPrefix(uri, "jdbc:postgresql://"), strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		u, perr := url.Parse(strings.TrimPrefix(uri, "jdbc:"))
		if perr != nil || u.Host == "" || len(u.Path) < 2 {
			return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: not a postgres url with a host and a database", PropURI)
		}
		q := u.Query()
		// PostgreSQL's JDBC driver takes the credentials as parameters.
		if u.User == nil && (q.Has("user") || q.Has("password")) {
			u.User = url.UserPassword(q.Get("user"), q.Get("password"))
		}
		q.Del("user")
		q.Del("password")
		if user != "" || password != "" {
			if user == "" && u.User != nil {
				user = u.User.Username()
			}
			u.User = url.UserPassword(user, password)
		}
		u.Scheme, u.RawQuery = "postgres", q.Encode()
		return "pg", u.String(), dialectPostgres, nil
	}
	return "", "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: expected jdbc:sqlite:/path, sqlite:///path, jdbc:postgresql://host/db or postgres://host/db", PropURI)
}

// parseDuration reads a duration as Paimon's TimeUtils.parseDuration
// does: a number with an optional unit, milliseconds without one.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > 1<<40 {
		return 0, strconv.ErrSyntax
	}
	var unit time.Duration
	switch strings.ToLower(strings.TrimSpace(s[i:])) {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		unit = time.Millisecond
	case "s", "sec", "secs", "second", "seconds":
		unit = time.Second
	case "m", "min", "mins", "minute", "minutes":
		unit = time.Minute
	case "h", "hour", "hours":
		unit = time.Hour
	case "d", "day", "days":
		unit = 24 * time.Hour
	default:
		return 0, strconv.ErrSyntax
	}
	return time.Duration(n) * unit, nil
}
