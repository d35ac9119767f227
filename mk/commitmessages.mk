# The distributed-commit benchmark: 100 workers × 100 files committed by one
# CommitMessages, against the same files committed in 100 sequential
# per-worker commits, through one gateway process (docs/commit-messages.md).
# COMMIT_BENCH_CATALOG=paimon runs it on a Paimon catalog; COMMIT_BENCH_PRIOR=N
# lands N single-snapshot ingests on the sequential table first (the replay
# check of each CommitMessages must not cost the table's history).
COMMIT_BENCH_WORKERS ?= 100
COMMIT_BENCH_FILES   ?= 100
COMMIT_BENCH_CATALOG ?= iceberg
COMMIT_BENCH_PRIOR   ?= 0
.PHONY: bench-commit-messages
bench-commit-messages: build
	$(GO) run ./integration/bench/commitmessages -bin $(BIN) -workers $(COMMIT_BENCH_WORKERS) -files $(COMMIT_BENCH_FILES) \
		-catalog $(COMMIT_BENCH_CATALOG) -prior $(COMMIT_BENCH_PRIOR)
BENCH_TARGETS += bench-commit-messages
