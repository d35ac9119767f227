# The ingest benchmark: 10M rows through the gateway with the ADBC Go
# driver, beside pqarrow writing the same rows in-process, in one run.
BENCH_ROWS ?= 10000000
.PHONY: bench-ingest
bench-ingest: build
	$(GO) run ./integration/bench/ingest -bin $(BIN) -rows $(BENCH_ROWS)
BENCH_TARGETS += bench-ingest

# What a user would compare ingest through the gateway with, in one run of
# paired rounds: Python ADBC through the gateway, pyiceberg's in-process
# append, pyarrow writing the same Parquet alone, and the ADBC Go driver
# (integration/bench/ingest/compare.py), at 5M and 10M rows.
BENCH_PY_ROWS   ?= 5000000 10000000
BENCH_PY_ROUNDS ?= 5
.PHONY: bench-ingest-py
bench-ingest-py: build venv
	$(GO) build -o bin/ingestbench ./integration/bench/ingest
	for rows in $(BENCH_PY_ROWS); do \
	  $(PYTHON) integration/bench/ingest/compare.py --bin $(BIN) --gobench bin/ingestbench \
	    --rows $$rows --rounds $(BENCH_PY_ROUNDS) || exit 1; \
	done
BENCH_TARGETS += bench-ingest-py
