package paimon

import (
	"errors"
	"fmt"
)

// Serializer versions of Java's CommitMessageSerializer. The version is not written in
// the payload, so both ends must agree on it; name these constants instead of numbers.
const (
	// Version10 is written by Paimon 1.3.x.
	Version10 = 10
	// Version11 is written by Paimon 1.4.x: index files gain a global-index row.
	Version11 = 11
	// Version12 is written by Paimon 2.0.0: the global-index row gains source metadata.
	Version12 = 12
	// DefaultVersion is the newest released version; encoders use it when not told.
	DefaultVersion = Version12
)

// SupportedVersions lists the versions this package decodes and encodes, oldest first.
// Version 13 (Paimon's main branch, unreleased) and 14 (paimon-rust) are not released
// Java formats and are rejected.
var SupportedVersions = []int{Version10, Version11, Version12}

// ErrUnsupportedVersion is wrapped by every error about a serializer or envelope version
// this package does not speak.
var ErrUnsupportedVersion = errors.New("unsupported version")

// ErrMalformed is wrapped by every error about bytes that do not form a valid payload.
var ErrMalformed = errors.New("malformed payload")

// CheckVersion returns an error naming the version found and the versions supported
// unless v is one of SupportedVersions.
func CheckVersion(v int) error {
	for _, s := range SupportedVersions {
		if v == s {
			return nil
		}
	}
	return fmt.Errorf("paimon: serializer version %d: %w (supported: %v)", v, ErrUnsupportedVersion, SupportedVersions)
}

// malformed builds an error about the field at fault that wraps ErrMalformed.
func malformed(field, format string, args ...any) error {
	return fmt.Errorf("paimon: %s: %s: %w", field, fmt.Sprintf(format, args...), ErrMalformed)
}
