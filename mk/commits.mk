# The many-writers benchmark (issue 10): 16 writers x 50 auto-commit appends
# x 100 rows to one table through one gateway with the ADBC Go driver, with
# group commit and with commit.group.enabled=false as the reference.
BENCH_WRITERS ?= 16
BENCH_APPENDS ?= 50
BENCH_APPEND_ROWS ?= 100
.PHONY: bench-commits
bench-commits: build
	$(GO) run ./integration/bench/commits -bin $(BIN) -writers $(BENCH_WRITERS) -appends $(BENCH_APPENDS) -rows $(BENCH_APPEND_ROWS)
BENCH_TARGETS += bench-commits
