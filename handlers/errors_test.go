package handlers

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
)

func TestCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{nil, codes.OK},
		{catalogs.Errorf(catalogs.ErrNotFound, "table x"), codes.NotFound},
		{fmt.Errorf("wrapped: %w", catalogs.Errorf(catalogs.ErrAlreadyExists, "x")), codes.AlreadyExists},
		{catalogs.Errorf(catalogs.ErrInvalidArgument, "x"), codes.InvalidArgument},
		{catalogs.Errorf(catalogs.ErrConflict, "x"), codes.Aborted},
		{catalogs.Errorf(catalogs.ErrUnavailable, "x"), codes.Unavailable},
		{catalogs.Errorf(catalogs.ErrPermissionDenied, "x"), codes.PermissionDenied},
		{catalogs.Errorf(catalogs.ErrUnauthenticated, "x"), codes.Unauthenticated},
		{catalogs.Errorf(catalogs.ErrFailedPrecondition, "x"), codes.FailedPrecondition},
		{context.Canceled, codes.Canceled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{status.Error(codes.ResourceExhausted, "x"), codes.ResourceExhausted},
		{errors.New("boom"), codes.Internal},
	} {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	err := Status(catalogs.Errorf(catalogs.ErrNotFound, "table lake.default.t does not exist"))
	if s, _ := status.FromError(err); s.Code() != codes.NotFound || s.Message() != "table lake.default.t does not exist" {
		t.Fatalf("Status = %v", err)
	}
}

func TestLikePattern(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		pattern *string
		in      string
		want    bool
	}{
		{nil, "anything", true},
		{p("a%"), "alpha", true},
		{p("a%"), "beta", false},
		{p("_eta"), "beta", true},
		{p("_eta"), "bbeta", false},
		{p("a.b"), "a.b", true},
		{p("a.b"), "axb", false},
		{p(`100\%`), "100%", true},
		{p(`100\%`), "1000", false},
		{p("%"), "", true},
		{p("(x)[y]"), "(x)[y]", true},
	} {
		m, err := likePattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := m(tc.in); got != tc.want {
			t.Errorf("%v LIKE %v = %v", tc.in, *orEmpty(tc.pattern), got)
		}
	}
}

func orEmpty(p *string) *string {
	if p == nil {
		s := "<nil>"
		return &s
	}
	return p
}
