# Delta Lake: independent readers read, value by value, the tables the gateway writes
# (TestDeltaThroughTheGateway, TestDeltaReaders, on S3 TestDeltaReadersS3), and the gateway reads what delta-rs and
# DuckDB wrote (TestDeltaGatewayReadsOthers), every version of tables OPTIMIZE compacted
# (TestDeltaReadersAfterOptimize) and of a table eight clients appended to while OPTIMIZE ran in a loop
# (TestDeltaOptimizeBesideEightWriters), and what Spark wrote, which delta-rs and Delta Kernel read
# again after the gateway appended to it, replaced it and wrote V2 checkpoints (catalogs/delta
# TestSparkFixtures, TestSparkV2CheckpointWritten, TestVacuumSidecars; docs/delta.md):
#   delta-rs (deltalake 1.6.6, .venv-delta), DuckDB 1.5.5 with its delta extension
#   (.venv-delta-duckdb: the extension loads only into its own DuckDB release; the venv carries the
#   iceberg and avro extensions too, for mk/iceberg.mk), and
#   Delta Kernel Java 4.4.0 (needs java 17+ and mvn; the jars come from Maven Central,
#   the classpath is written to integration/delta/java/target/classpath.txt).
DELTA_VENV        := .venv-delta
DELTA_DUCKDB_VENV := .venv-delta-duckdb
DELTA_KERNEL_CP   := integration/delta/java/target/classpath.txt

$(DELTA_VENV)/.installed: integration/delta/requirements.txt
	python3 -m venv $(DELTA_VENV)
	$(DELTA_VENV)/bin/pip install -q --disable-pip-version-check -r integration/delta/requirements.txt
	touch $@

$(DELTA_DUCKDB_VENV)/.installed: integration/delta/duckdb-requirements.txt
	python3 -m venv $(DELTA_DUCKDB_VENV)
	$(DELTA_DUCKDB_VENV)/bin/pip install -q --disable-pip-version-check -r integration/delta/duckdb-requirements.txt
	touch $@

$(DELTA_KERNEL_CP): integration/delta/java/pom.xml
	mvn -q -B -f integration/delta/java/pom.xml dependency:build-classpath -Dmdep.outputFile=$(CURDIR)/$@

.PHONY: delta-check delta-readers
delta-readers: $(DELTA_VENV)/.installed $(DELTA_DUCKDB_VENV)/.installed $(DELTA_KERNEL_CP)

delta-check: delta-readers
	FLIGHTGW_DELTALAKE=$(CURDIR)/$(DELTA_VENV)/bin/python \
	FLIGHTGW_DELTA_DUCKDB=$(CURDIR)/$(DELTA_DUCKDB_VENV)/bin/python \
	FLIGHTGW_DELTA_KERNEL=$(CURDIR)/$(DELTA_KERNEL_CP) \
	  $(GO) test -count=1 -run '^(TestDeltaThroughTheGateway|TestDeltaReaders|TestDeltaReadersS3|TestDeltaGatewayReadsOthers|TestDeltaInterleavedWriters|TestDeltaReadersAfterOptimize|TestDeltaOptimizeBesideEightWriters)$$' ./integration
	FLIGHTGW_DELTALAKE=$(CURDIR)/$(DELTA_VENV)/bin/python \
	FLIGHTGW_DELTA_KERNEL=$(CURDIR)/$(DELTA_KERNEL_CP) \
	  $(GO) test -count=1 -run '^(TestSparkFixtures|TestSparkV2CheckpointWritten|TestVacuumSidecars)$$' ./catalogs/delta

TEST_TARGETS += delta-check

# Ingest into a Delta table: the same 10M rows through the gateway (Python ADBC, a delta
# catalog on local files) and by delta-rs's write_deltalake in-process (deltalake 1.6.6,
# ZSTD level 1 as the gateway's), in paired alternating rounds: the median and range of the
# time ratio, CPU seconds, both peak RSS and the load average (integration/bench/delta).
DELTA_BENCH_ROWS   ?= 10000000
DELTA_BENCH_ROUNDS ?= 5
BENCH_TARGETS += delta-ingest-bench
.PHONY: delta-ingest-bench
delta-ingest-bench: build $(DELTA_VENV)/.installed
	$(DELTA_VENV)/bin/python integration/bench/delta/compare.py --bin $(BIN) \
	  --rows $(DELTA_BENCH_ROWS) --rounds $(DELTA_BENCH_ROUNDS)
