package handlers

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	flightpb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
)

// The session options flightgw understands: the default catalog and
// schema of unqualified table names (what JDBC's setCatalog and
// setSchema send).
const (
	SessionOptionCatalog = "catalog"
	SessionOptionSchema  = "schema"
)

// MaxSessions bounds the sessions whose options the gateway keeps, and
// MaxSessionsPerPrincipal those of one principal. A session's options
// are forgotten when it ends (CloseSession, or its connection closing);
// one more is refused rather than another session's forgotten.
const (
	MaxSessions             = 100000
	MaxSessionsPerPrincipal = 10000
)

// sessionOptions are one session's settings.
type sessionOptions struct {
	catalog string
	schema  string
}

// sessionOptions are the caller's options in its session: they are kept
// per principal as well, since a session key is only an address or a
// cookie.
func (h *Handler) sessionOptions(ctx context.Context, p auth.Principal) sessionOptions {
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	return h.sql.sessions.options[sessionKey(ctx)][p.ID()]
}

// SetSessionOptions sets the session's default catalog and schema. An
// unknown option or a catalog the caller cannot see is reported per
// option; the valid ones are still set.
func (h *Handler) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if sessionKey(ctx) == "" {
		return nil, status.Error(codes.FailedPrecondition, "session options need a session (a cookie or a connection)")
	}
	res := &flight.SetSessionOptionsResult{Errors: map[string]*flight.SetSessionOptionsResultError{}}
	fail := func(name string, v flightpb.SetSessionOptionsResult_ErrorValue) {
		res.Errors[name] = &flight.SetSessionOptionsResultError{Value: v}
	}
	o := h.sessionOptions(ctx, p)
	for name, v := range req.GetSessionOptions() {
		val, isString := v.GetOptionValue().(*flightpb.SessionOptionValue_StringValue)
		unset := v.GetOptionValue() == nil
		if !isString && !unset {
			fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
			continue
		}
		s := ""
		if isString {
			s = val.StringValue
		}
		switch strings.ToLower(name) {
		case SessionOptionCatalog:
			if s != "" {
				if _, _, err := h.catalog(ctx, s); err != nil {
					fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
					continue
				}
			}
			o.catalog = s
		case SessionOptionSchema:
			// A schema is a namespace name: refuse one no table name
			// could use, rather than fail every later query.
			if s != "" && catalogs.ValidateNamespace(strings.Split(s, ".")) != nil {
				fail(name, flight.SetSessionOptionsResultErrorInvalidValue)
				continue
			}
			o.schema = s
		default:
			fail(name, flight.SetSessionOptionsResultErrorInvalidName)
		}
	}
	h.sql.mu.Lock()
	err = h.sql.sessions.setOptions(sessionKey(ctx), p.ID(), o)
	h.sql.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// GetSessionOptions returns the session's catalog and schema, defaults
// filled in.
func (h *Handler) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	cat, schema := h.queryDefaults(ctx, p)
	opts, err := flight.NewSessionOptionValues(map[string]any{SessionOptionCatalog: cat, SessionOptionSchema: schema})
	if err != nil {
		return nil, Status(err)
	}
	return &flight.GetSessionOptionsResult{SessionOptions: opts}, nil
}

// CloseSession forgets the caller's options in its session and closes
// the prepared statements it cached there.
func (h *Handler) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	h.endSession(sessionKey(ctx), p.ID())
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}
