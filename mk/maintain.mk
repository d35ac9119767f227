# The table maintenance benchmark (issue 27): auto-commit appends of small
# batches to one Iceberg table (bench-maintain-paimon: a Paimon append
# table, compacted), then a full-table aggregate, with maintenance off, with
# one MaintainTable run, and the same rows in one commit as the reference.
BENCH_MAINT_APPENDS ?= 1000
BENCH_MAINT_ROWS ?= 1000
.PHONY: bench-maintain bench-maintain-paimon
bench-maintain: build
	$(GO) run ./integration/bench/maintain -bin $(BIN) -appends $(BENCH_MAINT_APPENDS) -rows $(BENCH_MAINT_ROWS)
bench-maintain-paimon: build
	$(GO) run ./integration/bench/maintain -bin $(BIN) -catalog paimon -appends $(BENCH_MAINT_APPENDS) -rows $(BENCH_MAINT_ROWS)
BENCH_TARGETS += bench-maintain bench-maintain-paimon
