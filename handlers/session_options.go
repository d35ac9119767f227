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

// MaxSessions bounds the sessions whose options the gateway keeps.
const MaxSessions = 100000

// sessionOptions are one session's settings.
type sessionOptions struct {
	catalog string
	schema  string
}

// optionsKey scopes a session's options to its owner as well: a session
// key is only an address or a cookie.
func optionsKey(ctx context.Context, p auth.Principal) string {
	return p.ID() + "\x00" + sessionKey(ctx)
}

func (h *Handler) sessionOptions(ctx context.Context, p auth.Principal) sessionOptions {
	h.sql.mu.Lock()
	defer h.sql.mu.Unlock()
	return h.sql.sessions[optionsKey(ctx, p)]
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
	if h.sql.sessions == nil {
		h.sql.sessions = map[string]sessionOptions{}
	}
	if len(h.sql.sessions) >= MaxSessions {
		// Sessions that never close (a client that drops its
		// connection) must not grow the map without bound: forget one.
		for k := range h.sql.sessions {
			delete(h.sql.sessions, k)
			break
		}
	}
	h.sql.sessions[optionsKey(ctx, p)] = o
	h.sql.mu.Unlock()
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

// CloseSession forgets the session's options.
func (h *Handler) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	h.sql.mu.Lock()
	delete(h.sql.sessions, optionsKey(ctx, p))
	h.sql.mu.Unlock()
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}
