# The ingest benchmark: 10M rows through the gateway with the ADBC Go
# driver, beside pqarrow writing the same rows in-process, in one run.
BENCH_ROWS ?= 10000000
.PHONY: bench-ingest
bench-ingest: build
	$(GO) run ./integration/bench/ingest -bin $(BIN) -rows $(BENCH_ROWS)
BENCH_TARGETS += bench-ingest
