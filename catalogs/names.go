package catalogs

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The rules every name from a client obeys (catalog, each namespace
// component, table), whatever path it arrives by: ingest, SQL, prepared
// statements, metadata calls, actions.
//
// Backends build storage locations from names (iceberg-go joins them into a
// URL as if they were already escaped, and the local file IO decodes it),
// so a name must never need escaping in a URI, an object key or a file
// name on any backend: then no spelling of a name ("%2e%2e%2f", a
// backslash, a NUL, a Unicode dot) can become a path of its own. The set
// is ASCII letters, digits, '_' and '-', which every URI, S3 key, file
// system and SQL identifier (quoted when it starts with a digit or holds a
// '-') carries as it is.
const (
	// AllowedNameChars describes the allowed set in messages and docs.
	AllowedNameChars = "[A-Za-z0-9_-]"
	// MaxNameBytes bounds one component: a file name on every common file
	// system holds 255 bytes.
	MaxNameBytes = 255
	// MaxNamespaceBytes bounds a namespace's components joined with dots,
	// which is how backends spell it in one directory name with a suffix
	// (Iceberg's "<ns>.db").
	MaxNamespaceBytes = 240
)

// ValidateName checks one name component against the rules. kind says
// what the name is ("catalog", "namespace", "table") for the message.
func ValidateName(kind, name string) error {
	if name == "" {
		return Errorf(ErrInvalidArgument, "%s name is empty", kind)
	}
	if reason := nameRule(name); reason != "" {
		return Errorf(ErrInvalidArgument, "%s name %q %s", kind, name, reason)
	}
	return nil
}

// ValidateNamespace checks a namespace: at least one component, each
// obeying the rules, and all of them joined within MaxNamespaceBytes.
func ValidateNamespace(ns []string) error {
	if len(ns) == 0 {
		return Errorf(ErrInvalidArgument, "namespace is empty")
	}
	for _, c := range ns {
		if c == "" {
			return Errorf(ErrInvalidArgument, "namespace %q: empty name component", strings.Join(ns, "."))
		}
		if reason := nameRule(c); reason != "" {
			return Errorf(ErrInvalidArgument, "namespace %q: name component %q %s", strings.Join(ns, "."), c, reason)
		}
	}
	if n := len(strings.Join(ns, ".")); n > MaxNamespaceBytes {
		return Errorf(ErrInvalidArgument, "namespace %q is %d bytes long, over the limit of %d", strings.Join(ns, "."), n, MaxNamespaceBytes)
	}
	return nil
}

// nameRule says how a non-empty component breaks the rules, or "" when it
// obeys them. The rule is restated in every message so that a client can
// fix its name without reading the docs.
func nameRule(s string) string {
	rule := fmt.Sprintf("(names are made of %s, do not start with '-', and are at most %d bytes)", AllowedNameChars, MaxNameBytes)
	if len(s) > MaxNameBytes {
		return fmt.Sprintf("is %d bytes long, over the limit %s", len(s), rule)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' && i == 0 {
			return "starts with '-' " + rule
		}
		if !nameChar(c) {
			return fmt.Sprintf("has forbidden character %s %s", quoteChar(s, i), rule)
		}
	}
	return ""
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// quoteChar prints the rune starting at byte i of s as Go quotes a rune
// ('%', '\x00', '․'), or the byte ('\xff') when it is not valid UTF-8.
func quoteChar(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("'\\x%02x'", s[i])
	}
	return fmt.Sprintf("%q", r)
}
