# The table maintenance benchmark (issue 27): auto-commit appends of small
# batches to one Iceberg table (bench-maintain), Delta table
# (bench-maintain-delta: OPTIMIZE and a checkpoint) or Paimon append table
# (bench-maintain-paimon: compacted), then a full-table aggregate, with
# maintenance off, with one MaintainTable run, and the same rows in one
# commit as the reference.
BENCH_MAINT_APPENDS ?= 1000
BENCH_MAINT_ROWS ?= 1000
.PHONY: bench-maintain bench-maintain-paimon
bench-maintain: build
	$(GO) run ./integration/bench/maintain -bin $(BIN) -appends $(BENCH_MAINT_APPENDS) -rows $(BENCH_MAINT_ROWS)
BENCH_TARGETS += bench-maintain
.PHONY: bench-maintain-delta
bench-maintain-delta: build
	$(GO) run ./integration/bench/maintain -bin $(BIN) -catalog delta -appends $(BENCH_MAINT_APPENDS) -rows $(BENCH_MAINT_ROWS)
BENCH_TARGETS += bench-maintain-delta
.PHONY: bench-maintain-paimon
bench-maintain-paimon: build
	$(GO) run ./integration/bench/maintain -bin $(BIN) -catalog paimon -appends $(BENCH_MAINT_APPENDS) -rows $(BENCH_MAINT_ROWS)
BENCH_TARGETS += bench-maintain-paimon
