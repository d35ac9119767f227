package flightsql

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// The catalog properties (docs/upstream.md).
const (
	propURI         = "uri"
	propCatalog     = "upstream_catalog"
	propUser        = "user"
	propPassword    = "password"
	propPasswordEnv = "password_env"
	propToken       = "token"
	propTokenEnv    = "token_env"
	propHeaders     = "headers"
	propInfoTTL     = "info_ttl"
	propLocations   = "location_allowlist"
	propTLSCA       = "tls_ca_file"
	propTLSName     = "tls_server_name"
	propTLSCert     = "tls_cert_file"
	propTLSKey      = "tls_key_file"
	propTLSInsecure = "tls_insecure_skip_verify"
	propKeepalive   = "keepalive"
	propIngestMode  = "write_mode"
	propNamespace   = "namespace"
	propQuote       = "identifier_quote"
	propParallel    = "parallel_endpoints"
	propForward     = "forward_caller_token"
	propSchemaTTL   = "schema_ttl"
	writeModeAuto   = "auto"
	writeModeIngest = "ingest"
	writeModeInsert = "insert"
	defaultInfoTTL  = 5 * time.Minute
	// defaultSchemaTTL keeps a table's schema for the several look-ups
	// of one query and the queries that follow it, without a GetTables
	// round trip (tens of ms on a busy upstream) each.
	defaultSchemaTTL = 10 * time.Second
	// defaultParallel endpoints of a FlightInfo are read at once: a
	// distributed upstream (one endpoint per node) streams from several
	// nodes while the gateway hands the batches on in order.
	defaultParallel = 4
)

var knownProps = map[string]bool{propURI: true, propCatalog: true, propUser: true, propPassword: true, propPasswordEnv: true,
	propToken: true, propTokenEnv: true, propHeaders: true, propInfoTTL: true, propLocations: true, propTLSCA: true,
	propTLSName: true, propTLSCert: true, propTLSKey: true, propTLSInsecure: true, propKeepalive: true, propIngestMode: true,
	propNamespace: true, propQuote: true, propParallel: true, propForward: true, propSchemaTTL: true}

// defaultRemote bounds the calls to the upstream unless the catalog's
// remote.* properties (catalogs/remoteprops.go) say otherwise.
var defaultRemote = catalogs.RemotePolicy{Timeout: 60 * time.Second, Attempts: 3, BreakerFailures: 5, BreakerOpen: 30 * time.Second}

// known reports whether k is a property of a flightsql catalog.
func known(k string) bool {
	_, alias := catalogs.ServiceAliases[k]
	return knownProps[k] || catalogs.RemoteKeys[k] || alias
}

// config is a catalog's parsed properties.
type config struct {
	// addr is the upstream's host:port; tls is nil for grpc://.
	addr string
	tls  *tls.Config
	// catalog is the upstream catalog the namespaces are schemas of
	// ("" : the upstream's tables without a catalog).
	catalog string
	// namespace, for an upstream without schemas (SQLite's are ""), is
	// the one namespace its tables are listed under; "" : the namespaces
	// are the upstream's schemas.
	namespace string
	// quote overrides the upstream's identifier quote character (for an
	// upstream that does not report it: Sail's Spark SQL takes `).
	quote string
	// user and password run the Basic handshake; token is a static
	// bearer token instead.
	user     string
	password catalogs.Secret
	token    catalogs.Secret
	// headers are sent with every call.
	headers map[string]string
	// timeout bounds one call (a stream's whole read is bounded by its
	// caller instead).
	timeout         time.Duration
	retries         int
	breakerFailures uint32
	breakerOpen     time.Duration
	infoTTL         time.Duration
	// schemaTTL is how long a table's schema is kept (0: read every time).
	schemaTTL time.Duration
	keepalive time.Duration
	// locations are the hosts (host or host:port) an endpoint's location
	// may name; any other location is refused (a FlightInfo can point
	// anywhere).
	locations map[string]bool
	// writeMode forces bulk ingest or prepared INSERT ("auto": ingest
	// when the upstream has it).
	writeMode string
	// parallel bounds the endpoints of one FlightInfo read at once.
	parallel int
	// forward sends the caller's own bearer token, instead of the
	// catalog's credential, on the queries and writes made for a caller.
	forward bool
}

func bad(key, format string, args ...any) error {
	return catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %s", key, fmt.Sprintf(format, args...))
}

// parseConfig validates the properties; errors name the key, never a
// secret's value.
func parseConfig(props map[string]string) (config, error) {
	c := config{infoTTL: defaultInfoTTL, schemaTTL: defaultSchemaTTL, headers: map[string]string{}, locations: map[string]bool{}, writeMode: writeModeAuto, parallel: defaultParallel}
	for k := range props {
		if !known(k) {
			return c, bad(k, "unknown property of a flightsql catalog")
		}
	}
	u, err := url.Parse(strings.TrimSpace(props[propURI]))
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "grpc" && u.Scheme != "grpc+tcp" && u.Scheme != "grpc+tls") {
		// Not echoed: a URI with user:password@ must not print.
		return c, bad(propURI, "a grpc://host:port or grpc+tls://host:port address without credentials is required")
	}
	c.addr = u.Host
	if u.Port() == "" {
		return c, bad(propURI, "the address needs a port")
	}
	c.catalog = props[propCatalog]
	if c.quote = props[propQuote]; len(c.quote) > 1 || strings.ContainsAny(c.quote, " .") {
		return c, bad(propQuote, "%q is not one quote character", c.quote)
	}
	if c.namespace = props[propNamespace]; c.namespace != "" {
		if err := catalogs.ValidateNamespace([]string{c.namespace}); err != nil {
			return c, bad(propNamespace, "%v", err)
		}
	}
	c.user = props[propUser]
	c.password, err = secretProp(props, propPassword, propPasswordEnv)
	if err != nil {
		return c, err
	}
	c.token, err = secretProp(props, propToken, propTokenEnv)
	if err != nil {
		return c, err
	}
	switch {
	case !c.token.IsZero() && c.user != "":
		return c, bad(propToken, "a static token and a user are exclusive: set one credential")
	case c.user == "" && !c.password.IsZero():
		return c, bad(propPassword, "a password needs a user")
	}
	for pair := range strings.SplitSeq(props[propHeaders], ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" || k == "authorization" {
			return c, bad(propHeaders, "%q is not name=value (and authorization comes from the credential properties)", k)
		}
		c.headers[k] = strings.TrimSpace(v)
	}
	for _, d := range []struct {
		key string
		v   *time.Duration
	}{{propInfoTTL, &c.infoTTL}, {propSchemaTTL, &c.schemaTTL}, {propKeepalive, &c.keepalive}} {
		if s := props[d.key]; s != "" {
			if *d.v, err = time.ParseDuration(s); err != nil || *d.v < 0 {
				return c, bad(d.key, "%q is not a duration", s)
			}
		}
	}
	// Timeouts, attempts and the breaker in every backend's dialect
	// (catalogs/remoteprops.go), the older spellings still read.
	rp, err := catalogs.ParseRemote(props, defaultRemote, catalogs.ServiceAliases)
	if err != nil {
		return c, err
	}
	c.timeout, c.retries, c.breakerFailures, c.breakerOpen = rp.Timeout, rp.Attempts, rp.BreakerFailures, rp.BreakerOpen
	for h := range strings.SplitSeq(props[propLocations], ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			c.locations[h] = true
		}
	}
	if s := props[propParallel]; s != "" {
		if c.parallel, err = strconv.Atoi(s); err != nil || c.parallel < 1 || c.parallel > 64 {
			return c, bad(propParallel, "%q is not a number of streams from 1 to 64", s)
		}
	}
	if s := props[propForward]; s != "" {
		if c.forward, err = strconv.ParseBool(s); err != nil {
			return c, bad(propForward, "%q is not a boolean", s)
		}
	}
	switch m := props[propIngestMode]; m {
	case "", writeModeAuto:
	case writeModeIngest, writeModeInsert:
		c.writeMode = m
	default:
		return c, bad(propIngestMode, "%q is not one of auto, ingest, insert", m)
	}
	if u.Scheme == "grpc+tls" {
		if c.tls, err = tlsConfig(props); err != nil {
			return c, err
		}
	} else {
		for _, k := range []string{propTLSCA, propTLSName, propTLSCert, propTLSKey, propTLSInsecure} {
			if props[k] != "" {
				return c, bad(k, "TLS properties need a grpc+tls:// uri")
			}
		}
	}
	return c, nil
}

// secretProp reads a secret from its property or from the environment
// variable another property names.
func secretProp(props map[string]string, key, envKey string) (catalogs.Secret, error) {
	v, env := props[key], props[envKey]
	if v != "" && env != "" {
		return catalogs.Secret{}, bad(key, "set %s or %s, not both", key, envKey)
	}
	if env != "" {
		ev, ok := os.LookupEnv(env)
		if !ok || ev == "" {
			return catalogs.Secret{}, bad(envKey, "environment variable %s is not set", env)
		}
		v = ev
	}
	return catalogs.NewSecret(v), nil
}

// tlsConfig is the TLS to the upstream: a CA file, a server name, a
// client certificate for mutual TLS, or (for tests only) no verification.
func tlsConfig(props map[string]string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: props[propTLSName]}
	if ca := props[propTLSCA]; ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, bad(propTLSCA, "%v", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, bad(propTLSCA, "%s holds no PEM certificate", ca)
		}
	}
	cert, key := props[propTLSCert], props[propTLSKey]
	switch {
	case cert != "" && key != "":
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, bad(propTLSCert, "%v", err)
		}
		t.Certificates = []tls.Certificate{kp}
	case cert != "" || key != "":
		return nil, bad(propTLSCert, "a client certificate needs both %s and %s", propTLSCert, propTLSKey)
	}
	if s := props[propTLSInsecure]; s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return nil, bad(propTLSInsecure, "%q is not a boolean", s)
		}
		t.InsecureSkipVerify = v
	}
	return t, nil
}

// locationAllowed reports whether an endpoint location (a URI) names a
// host the configuration allows.
func (c config) locationAllowed(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	return c.locations[strings.ToLower(host)] || c.locations[strings.ToLower(h)]
}
