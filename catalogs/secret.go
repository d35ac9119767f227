package catalogs

import (
	"fmt"
	"log/slog"
)

const redacted = "[REDACTED]"

// Secret holds a credential token. Every way of printing it (String,
// GoString, fmt verbs, JSON, slog) shows "[REDACTED]"; only Reveal returns
// the value, for the one place that sends it to the backend.
type Secret struct{ v string }

// NewSecret wraps a token.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the token itself. Never log its result.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether no token is set.
func (s Secret) IsZero() bool { return s.v == "" }

// String implements fmt.Stringer.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer (the %#v verb).
func (s Secret) GoString() string { return redacted }

// Format implements fmt.Formatter so that no verb, %x and %q included,
// prints the token.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler (YAML and text encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }
