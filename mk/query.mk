# SQL engine: the embedded DuckDB needs its Arrow interface, which
# duckdb-go-bindings only compiles with the duckdb_arrow build tag. Every
# go command that make runs (build, vet, test, run) gets it; without it the
# gateway builds but answers SQL with Unimplemented. GOFLAGS_NOTAG keeps
# the caller's flags without the tag, for the checks of a plain go command
# (test-notag in the Makefile).
GOFLAGS_NOTAG := $(GOFLAGS)
export GOFLAGS := $(strip $(GOFLAGS) -tags=duckdb_arrow)
# GOFLAGS_CHECKED adds the alloccheck tag: every allocation of the
# gateway's arrow-go allocators is checked against arrow-go's contract
# (internal/pqwrite/contract.go); make test-race runs with it.
GOFLAGS_CHECKED := $(strip $(GOFLAGS_NOTAG) -tags=duckdb_arrow,alloccheck)

QUERY_BENCH_ROWS ?= 10000000
.PHONY: bench-query
# Query benchmark: aggregate latency and full-stream throughput through the
# gateway beside in-process DuckDB over the same Parquet files, and the
# gateway's peak RSS during the stream (see docs/sql.md).
bench-query: build
	$(GO) run ./integration/bench/query -bin $(BIN) -rows $(QUERY_BENCH_ROWS)

BENCH_TARGETS += bench-query
