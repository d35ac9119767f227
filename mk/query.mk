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

# The peer benchmark: the same kind of full-table stream read by the Python
# ADBC driver from the gateway and from Sail (pysail) on the same Parquet
# files, in paired rounds (integration/bench/query/peer.py, docs/performance.md).
PEER_BENCH_ROWS   ?= 10000000
PEER_BENCH_ROUNDS ?= 9
PEER_REQS := integration/bench/query/requirements.txt
$(VENV)/.peer-installed: $(VENV)/.installed $(PEER_REQS)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r $(PEER_REQS)
	touch $@
.PHONY: bench-query-peer
bench-query-peer: build $(VENV)/.peer-installed
	$(PYTHON) integration/bench/query/peer.py --bin $(BIN) --rows $(PEER_BENCH_ROWS) --rounds $(PEER_BENCH_ROUNDS)
BENCH_TARGETS += bench-query-peer
