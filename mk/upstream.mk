# The flightsql catalog's overhead (docs/upstream.md): 10M rows SELECT *
# and a pushed aggregate sent to an upstream flightgw directly and through
# a second flightgw federating it, in paired rounds, with the load average.
UPSTREAM_BENCH_ROWS ?= 10000000
.PHONY: bench-upstream
bench-upstream: build
	$(GO) run ./integration/bench/upstream -bin $(BIN) -rows $(UPSTREAM_BENCH_ROWS)

BENCH_TARGETS += bench-upstream
