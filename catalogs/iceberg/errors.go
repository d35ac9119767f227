package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/sony/gobreaker/v2"

	"github.com/flightgw/flightgw/catalogs"
)

// errConflict marks a commit attempt that lost a compare-and-swap race.
var errConflict = errors.New("concurrent commit")

// mapErr turns an iceberg-go error into one wrapping a catalogs kind, with
// msg naming the object at fault. Errors that already carry a kind keep it.
func mapErr(err error, msg string) error {
	if err == nil {
		return nil
	}
	if catalogs.Kind(err) != nil {
		if strings.HasPrefix(err.Error(), msg) {
			return err
		}
		return fmt.Errorf("%s: %w", msg, err)
	}
	return catalogs.Wrap(kindOf(err), err, msg)
}

// kindOf classifies an error from iceberg-go, the SQL driver or the network.
func kindOf(err error) error {
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable), errors.Is(err, catalog.ErrNoSuchNamespace),
		errors.Is(err, table.ErrSnapshotNotFound):
		return catalogs.ErrNotFound
	case errors.Is(err, catalog.ErrTableAlreadyExists), errors.Is(err, catalog.ErrNamespaceAlreadyExists),
		strings.Contains(err.Error(), "already referenced by table"), uniqueViolation(err):
		// "already referenced": a receipt committed before (a retried
		// plain Commit).
		return catalogs.ErrAlreadyExists
	case isConflict(err):
		return catalogs.ErrConflict
	case errors.Is(err, rest.ErrUnauthorized):
		return catalogs.ErrUnauthenticated
	case errors.Is(err, rest.ErrForbidden):
		return catalogs.ErrPermissionDenied
	case errors.Is(err, catalog.ErrInvalidIdentifier), errors.Is(err, ice.ErrInvalidArgument),
		errors.Is(err, ice.ErrInvalidSchema), errors.Is(err, ice.ErrType), errors.Is(err, ice.ErrBadCast),
		errors.Is(err, ice.ErrBadLiteral), errors.Is(err, ice.ErrInvalidPartitionSpec),
		errors.Is(err, ice.ErrInvalidTransform), errors.Is(err, ice.ErrResolve),
		errors.Is(err, catalog.ErrNamespaceNotEmpty), catalogs.NameTooLong(err):
		return catalogs.ErrInvalidArgument
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests),
		errors.Is(err, rest.ErrServerError), errors.Is(err, rest.ErrServiceUnavailable),
		errors.Is(err, rest.ErrCommitStateUnknown):
		return catalogs.ErrUnavailable
	}
	return catalogs.ErrUnavailable
}

// uniqueViolation reports whether the SQL catalog refused to insert a
// table's row because one exists (iceberg-go's SQL catalog passes the
// database's error on when a create's CommitTable loses to a concurrent
// create): the name is taken, not the database unavailable, which would
// count against the catalog's breaker.
func uniqueViolation(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || // SQLite
		strings.Contains(msg, "duplicate key value violates unique constraint") // PostgreSQL
}

// isConflict reports whether a commit failed because another writer moved
// the table: iceberg-go's ErrCommitFailed (REST 409, SQL compare-and-swap),
// a failed requirement (the SQL catalog checks requirements against the
// table it just loaded) or a busy SQLite database.
func isConflict(err error) bool {
	if errors.Is(err, errConflict) || errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	msg := err.Error()
	// iceberg-go spells it "Requirement failed" for some requirements.
	return strings.Contains(strings.ToLower(msg), "requirement failed") || strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, "SQLITE_BUSY")
}

// isTransient reports whether a failed idempotent call may succeed if
// repeated: network and server trouble, not a missing table or bad input.
func isTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return false
	}
	k := catalogs.Kind(err)
	if k != nil {
		return k == catalogs.ErrUnavailable
	}
	return kindOf(err) == catalogs.ErrUnavailable
}

// protect runs fn and turns a panic inside iceberg-go or arrow into an
// error of kind, so that no input can crash the gateway.
func protect(kind error, what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = catalogs.Errorf(kind, "%s: %v", what, r)
		}
	}()
	return fn()
}
