package engine

import (
	"errors"
	"fmt"

	"github.com/flightgw/flightgw/catalogs"
)

// ErrUnsupported is wrapped by the error for a statement the engine does
// not execute (anything but a query, or a query construct it refuses).
// The message names the statement.
var ErrUnsupported = errors.New("unsupported statement")

// ErrResourceExhausted is wrapped by the error for a query that ran out of
// its memory budget (and could not spill).
var ErrResourceExhausted = errors.New("resource exhausted")

// errUnsupported returns an error wrapping ErrUnsupported.
func errUnsupported(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}

// errInvalid returns an error wrapping catalogs.ErrInvalidArgument.
func errInvalid(format string, args ...any) error {
	return catalogs.Errorf(catalogs.ErrInvalidArgument, format, args...)
}
