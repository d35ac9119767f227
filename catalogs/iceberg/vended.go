package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/flightgw/flightgw/catalogs"
)

// vendor asks a REST catalog for the storage credentials it vends for a
// table (the load-table call with X-Iceberg-Access-Delegation:
// vended-credentials). iceberg-go uses such credentials inside its FileIO
// but does not expose them, so GetSecurityContext makes the call itself,
// afresh every time: nothing here caches a storage credential.
type vendor struct {
	base   *url.URL // <uri>/v1/
	client *http.Client
	tokens oauth2.TokenSource // nil: no auth

	prefixOnce sync.Once
	prefix     string
	prefixErr  error
	warehouse  string
}

// tableLoad is the part of a LoadTableResult GetSecurityContext reads.
type tableLoad struct {
	Metadata struct {
		Location       string            `json:"location"`
		Properties     map[string]string `json:"properties"`
		EncryptionKeys []json.RawMessage `json:"encryption-keys"`
	} `json:"metadata"`
	MetadataLocation string            `json:"metadata-location"`
	Config           map[string]string `json:"config"`
	Credentials      []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

func newVendor(cfg config) (*vendor, error) {
	base, err := url.Parse(strings.TrimSuffix(cfg.uri, "/") + "/v1/")
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "property %q: %v", PropURI, err)
	}
	v := &vendor{base: base, client: &http.Client{Timeout: cfg.remote.Timeout}, warehouse: cfg.warehouse}
	props := cfg.passthrough
	switch {
	case props[PropToken] != "":
		v.tokens = oauth2.StaticTokenSource(&oauth2.Token{AccessToken: props[PropToken], TokenType: "Bearer"})
	case props[PropCredential] != "":
		id, secret, _ := strings.Cut(props[PropCredential], ":")
		tokenURL := base.JoinPath("oauth/tokens").String()
		if u := props[PropOAuth2ServerURI]; u != "" {
			tokenURL = u
		}
		scope := "catalog"
		if s := props["scope"]; s != "" {
			scope = s
		}
		cc := &clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: tokenURL,
			Scopes: []string{scope}, AuthStyle: oauth2.AuthStyleInParams}
		// The token source caches the catalog's bearer token until it
		// expires (not the storage credential).
		v.tokens = cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, v.client))
	}
	if p := props["prefix"]; p != "" {
		v.prefixOnce.Do(func() { v.prefix = p })
	}
	return v, nil
}

// get issues an authenticated GET and decodes the JSON answer into out.
func (v *vendor) get(ctx context.Context, u *url.URL, header http.Header, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, "rest request")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if v.tokens != nil {
		tok, err := v.tokens.Token()
		if err != nil {
			return catalogs.Wrap(catalogs.ErrUnauthenticated, err, "rest catalog token")
		}
		tok.SetAuthHeader(req)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrUnavailable, err, "rest catalog")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return catalogs.Wrap(catalogs.ErrUnavailable, err, "rest catalog")
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return catalogs.Errorf(catalogs.ErrNotFound, "rest catalog: %s not found", u.Path)
	case resp.StatusCode == http.StatusUnauthorized:
		return catalogs.Errorf(catalogs.ErrUnauthenticated, "rest catalog: unauthorized")
	case resp.StatusCode == http.StatusForbidden:
		return catalogs.Errorf(catalogs.ErrPermissionDenied, "rest catalog: forbidden")
	case resp.StatusCode >= 400:
		return catalogs.Errorf(catalogs.ErrUnavailable, "rest catalog: status %d", resp.StatusCode)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return catalogs.Wrap(catalogs.ErrUnavailable, err, "rest catalog: bad json")
	}
	return nil
}

// routePrefix reads the catalog's path prefix from /v1/config once.
func (v *vendor) routePrefix(ctx context.Context) (string, error) {
	v.prefixOnce.Do(func() {
		u := v.base.JoinPath("config")
		if v.warehouse != "" {
			u.RawQuery = url.Values{"warehouse": {v.warehouse}}.Encode()
		}
		var cfg struct {
			Defaults  map[string]string `json:"defaults"`
			Overrides map[string]string `json:"overrides"`
		}
		v.prefixErr = v.get(ctx, u, nil, &cfg)
		v.prefix = cfg.Defaults["prefix"]
		if p := cfg.Overrides["prefix"]; p != "" {
			v.prefix = p
		}
	})
	return v.prefix, v.prefixErr
}

// load fetches the table with vended credentials.
func (v *vendor) load(ctx context.Context, t catalogs.TableIdent) (tableLoad, error) {
	var res tableLoad
	prefix, err := v.routePrefix(ctx)
	if err != nil {
		return res, err
	}
	u := v.base
	if prefix != "" {
		u = u.JoinPath(prefix)
	}
	// Namespace levels are joined with the unit separator, as the REST
	// spec asks; JoinPath escapes it.
	u = u.JoinPath("namespaces", strings.Join(t.Namespace, "\x1f"), "tables", t.Name)
	h := http.Header{"X-Iceberg-Access-Delegation": {"vended-credentials"}}
	if err := v.get(ctx, u, h, &res); err != nil {
		return res, fmt.Errorf("table %s: %w", t, err)
	}
	return res, nil
}

// storageConfig picks the vended credential whose prefix best matches the
// table's location, else the response's config.
func (l tableLoad) storageConfig() map[string]string {
	best, n := map[string]string(nil), -1
	for _, c := range l.Credentials {
		if strings.HasPrefix(l.MetadataLocation, c.Prefix) && len(c.Prefix) > n {
			best, n = c.Config, len(c.Prefix)
		}
	}
	if best == nil && len(l.Credentials) > 0 {
		best = l.Credentials[0].Config
	}
	if best == nil {
		best = l.Config
	}
	return best
}

// location is the table's location, or failing that its metadata file's
// (the same storage, which is what encryptionFor looks at).
func (l tableLoad) location() string {
	if l.Metadata.Location != "" {
		return l.Metadata.Location
	}
	return l.MetadataLocation
}
