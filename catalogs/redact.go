package catalogs

import (
	"net/url"
	"regexp"
	"strings"
)

// RedactURI is a catalog URI or DSN fit for a message: an error opening a
// catalog names what it opened, never the password in it. A URL's
// password and the values of its credential-like query parameters
// (password, secret, token, key) show as xxxxx, as do those of a
// key=value DSN ("host=db password=..."); a path is shown whole.
func RedactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return dsnSecret.ReplaceAllString(uri, "${1}xxxxx")
	}
	if q := u.Query(); len(q) > 0 {
		changed := false
		for k := range q {
			if secretParam(k) {
				q.Set(k, "xxxxx")
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// dsnSecret matches a credential in a key=value DSN.
var dsnSecret = regexp.MustCompile(`(?i)(\b(?:password|passwd|pwd|secret|token)\s*=\s*)('[^']*'|\S+)`)

// secretParam reports whether a query parameter holds a credential.
func secretParam(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"password", "passwd", "pwd", "secret", "token", "key", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
