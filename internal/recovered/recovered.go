// Package recovered turns a panic on a goroutine the gateway starts into
// an error for the one request that goroutine serves. A panic on any
// goroutine but a gRPC handler's (whose interceptors recover it) ends the
// whole process, every client's requests with it; so each goroutine that
// touches a request's data defers Catch, and its owner reports the error
// as it reports any other (Internal, the stack in the log).
//
// Goroutines that third-party packages start are out of reach: arrow-go's
// compute functions run every kernel on a goroutine of execInternal's,
// and iceberg-go's writers fan out on their own. What keeps those safe is
// the allocator keeping arrow-go's contract (internal/pqwrite/owned.go,
// checked under the alloccheck tag) and the kernel property tests over
// every type the gateway writes (internal/pqwrite/kernels_test.go).
package recovered

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// Error is a panic caught on a goroutine, as an error.
type Error struct {
	// Where names the goroutine's work ("table scan of lake.db.t").
	Where string
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

func (e *Error) Error() string { return fmt.Sprintf("internal error in %s: %v", e.Where, e.Value) }

// Catch, deferred first on a goroutine (so it runs last), sets *err to
// the panic in progress, if there is one, and logs it with its stack.
// Catch must be the deferred call itself: recover works only there.
func Catch(err *error, where string) {
	r := recover()
	if r == nil {
		return
	}
	e := &Error{Where: where, Value: r, Stack: debug.Stack()}
	slog.Error("panic recovered", "where", where, "panic", fmt.Sprint(r), "stack", string(e.Stack))
	*err = e
}
