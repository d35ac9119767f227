package handlers

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
)

// kindCodes maps error kinds to gRPC codes.
var kindCodes = []struct {
	kind error
	code codes.Code
}{
	{catalogs.ErrNotFound, codes.NotFound},
	{catalogs.ErrAlreadyExists, codes.AlreadyExists},
	{catalogs.ErrInvalidArgument, codes.InvalidArgument},
	{catalogs.ErrConflict, codes.Aborted},
	{catalogs.ErrUnavailable, codes.Unavailable},
	{catalogs.ErrPermissionDenied, codes.PermissionDenied},
	{catalogs.ErrUnauthenticated, codes.Unauthenticated},
	{catalogs.ErrFailedPrecondition, codes.FailedPrecondition},
}

// Code returns the gRPC code for err: the code of a status error, the code
// of the kind it wraps, Canceled or DeadlineExceeded for context errors,
// and Internal otherwise.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	for _, kc := range kindCodes {
		if errors.Is(err, kc.kind) {
			return kc.code
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// Status turns err into a gRPC status error with Code(err) and err's
// message. A status error passes through unchanged.
func Status(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(Code(err), err.Error())
}
