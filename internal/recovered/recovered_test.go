package recovered

import (
	"errors"
	"strings"
	"testing"
)

func TestCatchOnAGoroutine(t *testing.T) {
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() { errc <- err }()
		defer Catch(&err, "a scan")
		var s []int
		_ = s[3] // index out of range
	}()
	err := <-errc
	var e *Error
	if !errors.As(err, &e) || e.Where != "a scan" || !strings.Contains(err.Error(), "index out of range") || len(e.Stack) == 0 {
		t.Fatalf("got %v, want the panic as an *Error naming the work", err)
	}
}

func TestCatchLeavesErrorsAlone(t *testing.T) {
	want := errors.New("plain")
	err := func() (err error) {
		defer Catch(&err, "x")
		return want
	}()
	if err != want {
		t.Fatalf("got %v, want %v", err, want)
	}
}
