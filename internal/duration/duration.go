// Package duration is a time.Duration for configuration files. Decoding
// never fails on a malformed value; Check reports it with the key it was
// found under, because YAML decoders do not name the key of a field whose
// own unmarshaling failed.
package duration

import (
	"fmt"
	"time"
)

// Duration is written like time.ParseDuration's input: 90s, 10m, 1h30m.
type Duration struct {
	time.Duration
	invalid string
}

// Of returns d as a Duration.
func Of(d time.Duration) Duration { return Duration{Duration: d} }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		*d = Duration{invalid: string(b)}
		return nil
	}
	*d = Duration{Duration: v}
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Check returns an error naming key when the value was not a duration.
func (d Duration) Check(key string) error {
	if d.invalid != "" {
		return fmt.Errorf("%s: %q is not a duration (e.g. 30s, 10m, 1h)", key, d.invalid)
	}
	if d.Duration < 0 {
		return fmt.Errorf("%s: negative", key)
	}
	return nil
}
