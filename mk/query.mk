# SQL engine: the embedded DuckDB needs its Arrow interface, which
# duckdb-go-bindings only compiles with the duckdb_arrow build tag. Every
# go command that make runs (build, vet, test) gets it; without it the
# gateway builds but answers SQL with Unavailable.
export GOFLAGS := $(strip $(GOFLAGS) -tags=duckdb_arrow)

.PHONY: bench-query
# Query benchmark: aggregate and full-stream latency through the gateway
# beside in-process DuckDB over the same Parquet files (see docs/sql.md).
bench-query: build
	FLIGHTGW_BIN=$(abspath $(BIN)) $(GO) test -count=1 -run '^$$' -bench BenchmarkQuery -benchtime 3x -timeout 30m ./integration/bench/query/

BENCH_TARGETS += bench-query
