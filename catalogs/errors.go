package catalogs

import (
	"errors"
	"fmt"
)

// The kinds of error every backend, and the txn and auth packages, wrap.
// Callers test them with errors.Is; handlers map them to gRPC codes.
var (
	ErrNotFound         = errors.New("not found")
	ErrAlreadyExists    = errors.New("already exists")
	ErrInvalidArgument  = errors.New("invalid argument")
	ErrConflict         = errors.New("conflict")
	ErrUnavailable      = errors.New("unavailable")
	ErrPermissionDenied = errors.New("permission denied")
	ErrUnauthenticated  = errors.New("unauthenticated")
	// ErrFailedPrecondition: the object is not in the state the call needs
	// (a transaction that has already ended).
	ErrFailedPrecondition = errors.New("failed precondition")
)

// kindError carries a message naming the object at fault, the kind it
// wraps and an optional cause. Its text is the message (which already
// includes the cause's text): the kind is for errors.Is.
type kindError struct {
	kind error
	msg  string
	err  error
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Unwrap() []error {
	if e.err != nil {
		return []error{e.kind, e.err}
	}
	return []error{e.kind}
}

// Errorf returns an error of the given kind whose message is formatted from
// format and args. A %w verb in format wraps a cause as well.
func Errorf(kind error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &kindError{kind: kind, msg: err.Error(), err: errors.Unwrap(err)}
}

// Wrap returns err marked with kind and prefixed with msg, unless err is nil.
func Wrap(kind error, err error, msg string) error {
	if err == nil {
		return nil
	}
	return &kindError{kind: kind, msg: msg + ": " + err.Error(), err: err}
}

// Kind returns the kind err wraps, or nil when it wraps none of them.
func Kind(err error) error {
	for _, k := range []error{ErrNotFound, ErrAlreadyExists, ErrInvalidArgument, ErrConflict,
		ErrUnavailable, ErrPermissionDenied, ErrUnauthenticated, ErrFailedPrecondition} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}
