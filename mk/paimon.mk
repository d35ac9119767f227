# Paimon commit-message codec (codec/paimon) and its cross-check against Paimon Java
# (integration/paimon-java). See docs/commit-messages.md.
#   make paimon-java-check   Go-encoded payloads and the golden fixtures, read by Paimon Java
#   make paimon-fixtures     regenerate codec/paimon/testdata/ with Paimon Java
#   make paimon-bench        Go vs Java on a 10,000-data-file payload, with the ratio
#   make paimon-table-check  tables the gateway's Paimon backend wrote, read by Paimon Java
#                            1.4.2 (rows and buckets), and tables Java wrote, read by the backend
#   make paimon-s3-check    the same on S3 (integration/s3server): the sample tables the
#                            gateway wrote, read by Paimon Java 1.4.2 (paimon-s3) and pypaimon
#                            2.1.0; Java's tables read by the backend
#   make paimon-features-check  tables with Flink's features (deletion vectors, dynamic
#                            buckets, merge engines, sequence.field, NUL bytes in a
#                            composite key, ORC) written by Paimon Java 1.4.2: the backend
#                            reads or refuses each, appends or refuses, and Java and
#                            pypaimon read what each then holds
#   make paimon-dist-check   distributed commits both ways: Paimon Java writers' payloads
#                            committed by the gateway, the gateway's committed by Java
#   make paimon-jdbc-check   the JDBC catalog (metastore jdbc, SQLite) shared with Paimon Java
#                            1.4.2's JdbcCatalog both ways, and commits racing under its lock
#   make paimon-jdbc-postgres-check  the same and the conformance suite on a throwaway PostgreSQL
#   make fuzz                each fuzz target for FUZZTIME (default 30s)
PAIMON_JAVA    := integration/paimon-java
PAIMON_MVN     := mvn -q -B -f $(PAIMON_JAVA)/pom.xml
PAIMON_OUT     := $(PAIMON_JAVA)/target/go-payloads
PAIMON_FIXTURES := $(CURDIR)/codec/paimon/testdata
FUZZTIME ?= 30s
# The newest serializer version a served Paimon release (1.4.2) reads: the benchmark's.
PAIMON_BENCH_VERSION ?= 11

PAIMON_TABLES := $(CURDIR)/$(PAIMON_JAVA)/target/tables

PAIMON_VENV   := .venv-paimon
PAIMON_DIST   := $(CURDIR)/$(PAIMON_JAVA)/target/dist

TEST_TARGETS  += paimon-java-check paimon-table-check paimon-pypaimon-check paimon-s3-check paimon-dist-check paimon-replica-check
TEST_TARGETS  += paimon-jdbc-check paimon-jdbc-postgres-check paimon-features-check
BENCH_TARGETS += paimon-bench

.PHONY: paimon-jdbc-check paimon-jdbc-postgres-check paimon-features-check
.PHONY: paimon-java-check paimon-table-check paimon-dist-check paimon-pypaimon-check paimon-replica-check paimon-s3-check paimon-s3-steps paimon-fixtures paimon-go-payloads paimon-bench fuzz

paimon-go-payloads:
	rm -rf $(PAIMON_OUT) && mkdir -p $(PAIMON_OUT)
	$(GO) test -count=1 -run '^TestGoCases$$' ./codec/paimon -args -emit=$(CURDIR)/$(PAIMON_OUT)

# Every module (one per served Paimon release) deserializes the Go payloads and the
# golden fixtures of every version it reads and compares them with their JSON.
paimon-java-check: paimon-go-payloads
	$(PAIMON_MVN) compile exec:java -Dexec.args="verify $(CURDIR)/$(PAIMON_OUT) $(PAIMON_FIXTURES)"

# catalogs/paimon writes its sample tables (append, fixed bucket, primary key with updates,
# partitioned, overwritten, tables of many commits whose manifests the gateway merged, and
# tables the gateway compacted, with their snapshots before and at the COMPACT one) with
# their expected rows; Paimon Java 1.4.2 reads each (time travel for table@snapshot) and
# recomputes every row's bucket, compacts the gateway-compacted primary-key tables again with
# its own writer (compact-tables: its merge tree restores the gateway's levels), compacts
# every table's manifests with its own ManifestFileMerger and reads them again, and the
# backend reads them over Java's compactions. Then Java writes its own tables and the
# backend reads them.
paimon-table-check:
	rm -rf $(PAIMON_TABLES) && mkdir -p $(PAIMON_TABLES)
	$(GO) test -count=1 -run '^TestWriteSamples$$' ./catalogs/paimon -args -samples-out=$(PAIMON_TABLES)/gateway
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="verify-tables $(PAIMON_TABLES)/gateway default"
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="compact-tables $(PAIMON_TABLES)/gateway default g_compact + compact-manifests $(PAIMON_TABLES)/gateway default"
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="verify-tables $(PAIMON_TABLES)/gateway default"
	$(GO) test -count=1 -run '^TestReadSamplesBack$$' ./catalogs/paimon -args -samples-out=$(PAIMON_TABLES)/gateway
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="write-sample $(PAIMON_TABLES)/java"
	$(GO) test -count=1 -run '^TestReadJavaTables$$' -v ./catalogs/paimon -args -java-warehouse=$(PAIMON_TABLES)/java

# The same cross-checks on S3: integration/s3server (gofakes3 on memory, path-style, on
# 127.0.0.1) runs paimon-s3-steps with its endpoint and test credentials in the environment
# (S3_ENDPOINT, AWS_*) and stops with them. The gateway writes the samples at the root of
# bucket lake (data files from single PUTs and from multipart uploads), their expected rows
# into a local directory; Paimon Java 1.4.2 through paimon-s3 (Hadoop's S3A) and pypaimon
# 2.1.0 through pyarrow's S3FileSystem read every one; Java writes its tables under a prefix,
# s3://java/wh, and the backend reads and lists them, then commits five rows onto each
# (updating keys of the primary-key table) for Java to read back, with the bucket of each row,
# and pypaimon too.
PAIMON_S3 := $(CURDIR)/$(PAIMON_JAVA)/target/s3
PAIMON_S3_TIMEOUT ?= 3m

paimon-s3-check: $(PAIMON_VENV)/.installed
	rm -rf $(PAIMON_S3) && mkdir -p $(PAIMON_S3)/expected
	$(GO) build -o $(PAIMON_S3)/s3server ./integration/s3server
	$(PAIMON_S3)/s3server -bucket lake,java -timeout $(PAIMON_S3_TIMEOUT) -- $(MAKE) --no-print-directory paimon-s3-steps

# Only under s3server (paimon-s3-check).
paimon-s3-steps:
	@test -n "$$S3_ENDPOINT" || { echo "paimon-s3-steps runs under integration/s3server: make paimon-s3-check"; exit 2; }
	$(GO) test -count=1 -run '^TestWriteSamples$$' ./catalogs/paimon -args -samples-out=s3://lake -samples-expected=$(PAIMON_S3)/expected
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="verify-tables s3://lake default $(PAIMON_S3)/expected + write-sample s3://java/wh"
	PAIMON_SAMPLES=s3://lake PAIMON_EXPECTED=$(PAIMON_S3)/expected $(PAIMON_VENV)/bin/python -m pytest -q integration/pypaimon
	$(GO) test -count=1 -run '^TestReadJavaTables$$' -v ./catalogs/paimon -args -java-warehouse=s3://java/wh
	$(GO) test -count=1 -run '^TestAppendJavaTables$$' -v ./catalogs/paimon -args -java-warehouse=s3://java/wh -samples-expected=$(PAIMON_S3)/java-expected
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="verify-tables s3://java/wh db $(PAIMON_S3)/java-expected"
	PAIMON_SAMPLES=s3://java/wh PAIMON_DB=db PAIMON_EXPECTED=$(PAIMON_S3)/java-expected $(PAIMON_VENV)/bin/python -m pytest -q integration/pypaimon

# The distributed commit across Paimon Java 1.4.2 and the gateway (docs/commit-messages.md),
# on one warehouse: two Java writers stage payloads (write-messages); the gateway commits
# them with CommitMessages and SQL reads them, three gateway workers and a coordinator do
# the same, and two gateway workers prepare payloads for Java (TestPaimonJavaPayloads,
# TestPaimonCommitMessages); Java reads every row the gateway committed (verify-tables) and
# commits the gateway's payloads with BatchTableCommit (commit-messages); the gateway's SQL
# reads them (TestPaimonJavaCommitted).
paimon-dist-check:
	rm -rf $(PAIMON_DIST) && mkdir -p $(PAIMON_DIST)
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="write-messages $(PAIMON_DIST)/wh default from_java $(PAIMON_DIST)/java"
	$(GO) test -count=1 -run '^TestPaimon(JavaPayloads|CommitMessages)$$|^TestReplicasCommitOnce$$/^paimon$$' ./integration -args -paimon-dist=$(PAIMON_DIST)
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="verify-tables $(PAIMON_DIST)/wh default"
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="commit-messages $(PAIMON_DIST)/wh default for_java $(PAIMON_DIST)/gateway"
	$(GO) test -count=1 -run '^TestPaimonJavaCommitted$$' ./integration -args -paimon-dist=$(PAIMON_DIST)

# Tables as Flink writes them (docs/paimon.md, "Table options"): Paimon Java 1.4.2 writes a
# primary-key table with deletion vectors, one with dynamic buckets (its hash index), one with
# postponed buckets, one of
# each merge engine (partial-update, first-row, aggregation), one with sequence.field, one
# with a composite string key holding NUL bytes, and an ORC append table (write-features);
# the backend reads each (or refuses, FailedPrecondition naming the option) and appends to
# each (or refuses, leaving the table as it was) and compacts each (full_compact, or refuses
# naming the option), writing the rows each must then hold (TestJavaFeatureTables); Java
# (verify-tables) and pypaimon read exactly those.
PAIMON_FEATURES := $(CURDIR)/$(PAIMON_JAVA)/target/features

paimon-features-check: $(PAIMON_VENV)/.installed
	rm -rf $(PAIMON_FEATURES) && mkdir -p $(PAIMON_FEATURES)
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="write-features $(PAIMON_FEATURES)/wh"
	$(GO) test -count=1 -run '^TestJavaFeatureTables$$' -v ./catalogs/paimon -args -features-warehouse=$(PAIMON_FEATURES)/wh -samples-expected=$(PAIMON_FEATURES)/expected
	$(PAIMON_MVN) compile exec:java -pl paimon-1.4 -Dexec.args="verify-tables $(PAIMON_FEATURES)/wh db $(PAIMON_FEATURES)/expected"
	PAIMON_SAMPLES=$(PAIMON_FEATURES)/wh PAIMON_DB=db PAIMON_EXPECTED=$(PAIMON_FEATURES)/expected PAIMON_PYPAIMON_MICROS=f_types_pk \
	  $(PAIMON_VENV)/bin/python -m pytest -q integration/pypaimon

# Paimon's JDBC catalog (docs/paimon.md), one warehouse and one metastore shared by the
# gateway's catalogs/paimon and Paimon Java 1.4.2's JdbcCatalog (catalog options as
# -Dpaimon.catalog.*, read by Tables.catalog), lock.enabled on both sides: the gateway
# writes its samples and Java lists them (jdbc-list) and reads every row (verify-tables);
# Java writes its samples and the gateway lists and reads them (TestReadJavaTablesJDBC);
# then 20 gateway and 20 Java commits race on one table under JdbcCatalogLock and every
# one lands (TestJDBCJavaRace). PAIMON_JDBC_URI selects the database (SQLite by default;
# paimon-jdbc-postgres-check passes a throwaway PostgreSQL's).
PAIMON_JDBC     := $(CURDIR)/$(PAIMON_JAVA)/target/jdbc
PAIMON_JDBC_URI ?= jdbc:sqlite:$(PAIMON_JDBC)/paimon.db
PAIMON_JDBC_MVN  = $(PAIMON_MVN) -Dpaimon.catalog.metastore=jdbc '-Dpaimon.catalog.uri=$(PAIMON_JDBC_URI)' \
  -Dpaimon.catalog.lock.enabled=true compile exec:java -pl paimon-1.4
PAIMON_JDBC_GO   = $(GO) test -count=1 ./catalogs/paimon

paimon-jdbc-check:
	rm -rf $(PAIMON_JDBC) && mkdir -p $(PAIMON_JDBC)
	$(PAIMON_JDBC_GO) -run '^TestWriteSamplesJDBC$$' -args -samples-out=$(PAIMON_JDBC)/wh '-jdbc-uri=$(PAIMON_JDBC_URI)'
	$(PAIMON_JDBC_MVN) -Dexec.args="jdbc-list $(PAIMON_JDBC)/wh default g_append,g_fixed,g_pk,g_part,g_pk_part,g_over,race"
	$(PAIMON_JDBC_MVN) -Dexec.args="verify-tables $(PAIMON_JDBC)/wh default"
	$(PAIMON_JDBC_MVN) -Dexec.args="write-sample $(PAIMON_JDBC)/wh"
	$(PAIMON_JDBC_GO) -run '^TestReadJavaTablesJDBC$$' -v -args -java-warehouse=$(PAIMON_JDBC)/wh '-jdbc-uri=$(PAIMON_JDBC_URI)'
	$(PAIMON_JDBC_GO) -c -o $(PAIMON_JDBC)/paimon.test
	@set -e; $(PAIMON_JDBC_MVN) -Dexec.args="jdbc-commit-loop $(PAIMON_JDBC)/wh default race 20 $(PAIMON_JDBC)" & java=$$!; \
	  if ! $(PAIMON_JDBC)/paimon.test -test.run '^TestJDBCJavaRace$$' -test.v -samples-out=$(PAIMON_JDBC)/wh '-jdbc-uri=$(PAIMON_JDBC_URI)'; then \
	    kill $$java 2>/dev/null; wait $$java; exit 1; fi; \
	  wait $$java

# The conformance suite with the metastore on a throwaway PostgreSQL, then paimon-jdbc-check
# on it (needs PostgreSQL's server binaries; skipped with a message when absent).
paimon-jdbc-postgres-check:
	GO="$(GO)" MAKE="$(MAKE)" bash $(PAIMON_JAVA)/postgres.sh

# pypaimon 2.1.0 (its own venv: it pins an older pyarrow) reads every sample table.
$(PAIMON_VENV)/.installed: integration/pypaimon/requirements.txt
	python3 -m venv $(PAIMON_VENV)
	$(PAIMON_VENV)/bin/pip install -q --disable-pip-version-check -r integration/pypaimon/requirements.txt
	touch $@

paimon-pypaimon-check: $(PAIMON_VENV)/.installed
	rm -rf $(PAIMON_TABLES)/pypaimon
	$(GO) test -count=1 -run '^TestWriteSamples$$' ./catalogs/paimon -args -samples-out=$(PAIMON_TABLES)/pypaimon
	PAIMON_SAMPLES=$(PAIMON_TABLES)/pypaimon $(PAIMON_VENV)/bin/python -m pytest -q integration/pypaimon

# Two gateway processes sharing a warehouse are sent one payload under two commit ids at
# the same instant: one lands, the other is FailedPrecondition, and pypaimon reads every
# row once (TestReplicasCommitOnce; Iceberg too, read by SQL).
paimon-replica-check: $(PAIMON_VENV)/.installed
	FLIGHTGW_PYPAIMON=$(CURDIR)/$(PAIMON_VENV)/bin/python $(GO) test -count=1 -run '^TestReplicasCommitOnce$$' ./integration

paimon-fixtures:
	$(PAIMON_MVN) compile exec:java -Dexec.args="generate $(PAIMON_FIXTURES)"
	$(GO) test -count=1 ./codec/paimon

paimon-bench: paimon-go-payloads
	@set -euo pipefail; \
	echo "load average before: $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	go_out=$$($(GO) test -run '^$$' -bench 'Benchmark(Encode|Decode)List$$' -benchtime 3s -count 5 ./codec/paimon); echo "$$go_out"; \
	java_out=$$($(PAIMON_MVN) compile exec:java -pl paimon-1.4 \
	  -Dexec.args="bench $(CURDIR)/$(PAIMON_OUT)/bench_v$(PAIMON_BENCH_VERSION).payload $(PAIMON_BENCH_VERSION)"); echo "$$java_out"; \
	echo "load average after: $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	stat() { sort -n | awk '{a[NR]=$$1} END {print a[1], a[int((NR+1)/2)]}'; }; \
	genc=$$(echo "$$go_out" | awk '/^BenchmarkEncodeList/ {print $$3}' | stat); \
	gdec=$$(echo "$$go_out" | awk '/^BenchmarkDecodeList/ {print $$3}' | stat); \
	jenc=$$(echo "$$java_out" | sed -n 's/^BENCH java .*encode_min_ns=\([0-9]*\) encode_ns=\([0-9]*\).*/\1 \2/p'); \
	jdec=$$(echo "$$java_out" | sed -n 's/^BENCH java .*decode_min_ns=\([0-9]*\) decode_ns=\([0-9]*\).*/\1 \2/p'); \
	for op in encode decode; do \
	  if [ $$op = encode ]; then g="$$genc"; j="$$jenc"; else g="$$gdec"; j="$$jdec"; fi; \
	  set -- $$g $$j; \
	  awk -v op=$$op -v gmin=$$1 -v gmed=$$2 -v jmin=$$3 -v jmed=$$4 'BEGIN { \
	    printf "paimon bench %s, 10,000 data files: Go median %.1f ms (min %.1f), Java median %.1f ms (min %.1f); Go/Java time: median %.2f, min %.2f\n", \
	      op, gmed/1e6, gmin/1e6, jmed/1e6, jmin/1e6, gmed/jmed, gmin/jmin }'; \
	done

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeList$$' -fuzztime $(FUZZTIME) ./codec/paimon
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) ./codec/envelope
	$(GO) test -run '^$$' -fuzz '^FuzzBinaryRow$$' -fuzztime $(FUZZTIME) ./codec/paimon

# Ingest into a Paimon append table: 10M rows (int64, float64, 16-byte string, timestamp)
# through the gateway (ADBC Go, a Paimon catalog on a local warehouse) against pypaimon
# 2.1.0 writing the same Arrow batches in-process; paired alternating rounds, the median
# pypaimon/gateway time ratio and the gateway's peak RSS (VmHWM).
PAIMON_BENCH_ROWS   ?= 10000000
PAIMON_BENCH_ROUNDS ?= 3
BENCH_TARGETS += paimon-ingest-bench
.PHONY: paimon-ingest-bench
paimon-ingest-bench: build $(PAIMON_VENV)/.installed
	$(GO) run ./integration/bench/paimon -bin $(BIN) -python $(PAIMON_VENV)/bin/python \
	  -rows $(PAIMON_BENCH_ROWS) -rounds $(PAIMON_BENCH_ROUNDS)

# Scan planning (PlanFiles) of a Paimon append table after 500 one-file commits, with the
# manifest compaction every commit runs (Paimon's defaults) and with it kept from running
# (the base manifest list only grows); median ns/op of each and the ratio.
BENCH_TARGETS += paimon-plan-bench
.PHONY: paimon-plan-bench
paimon-plan-bench:
	@set -euo pipefail; \
	out=$$($(GO) test -run '^$$' -bench '^BenchmarkPlanAfterCommits$$' -benchtime 2s -count 5 ./catalogs/paimon); echo "$$out"; \
	med() { echo "$$out" | awk -v n="$$1" '$$1 ~ n {print $$3}' | sort -n | awk '{a[NR]=$$1} END {print a[int((NR+1)/2)]}'; }; \
	c=$$(med /compacted); u=$$(med /uncompacted); \
	awk -v c=$$c -v u=$$u 'BEGIN { printf "paimon plan after 500 commits: compacted median %.1f ms, uncompacted %.1f ms; uncompacted/compacted %.1f\n", c/1e6, u/1e6, u/c }'
