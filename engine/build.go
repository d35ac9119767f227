package engine

import "errors"

// BuildTag is the build tag that compiles the SQL engine in: duckdb-go-bindings
// builds its Arrow interface only with it. mk/query.mk sets it for every make
// target; a plain `go build` leaves it out.
const BuildTag = "duckdb_arrow"

// ErrNoEngine is returned by New in a build without BuildTag, and is the
// message a gateway without the engine refuses SQL with (Unimplemented: a
// client that retries gets the same answer from this binary).
var ErrNoEngine = errors.New("SQL engine not built into this binary (build tag " + BuildTag + "): SQL queries are refused")
