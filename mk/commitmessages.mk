# The distributed-commit benchmark: 100 workers × 100 files committed by one
# CommitMessages, against the same files committed in 100 sequential
# per-worker commits, through one gateway process (docs/commit-messages.md).
COMMIT_BENCH_WORKERS ?= 100
COMMIT_BENCH_FILES   ?= 100
.PHONY: bench-commit-messages
bench-commit-messages: build
	$(GO) run ./integration/bench/commitmessages -bin $(BIN) -workers $(COMMIT_BENCH_WORKERS) -files $(COMMIT_BENCH_FILES)
BENCH_TARGETS += bench-commit-messages
