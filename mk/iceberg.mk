# Iceberg backend (catalogs/iceberg) checks beyond the Go unit tests:
#   make iceberg-pyiceberg-check  pyiceberg's SqlCatalog reads and appends to the embedded lake, reads a replaced table,
#                                 and reads each row once after two replicas raced one payload;
#                                 pyiceberg, DuckDB, pyarrow and Iceberg Java (needs java 17+, mvn) read a table
#                                 of every type alike, with its metrics; Iceberg Java 1.10 and DuckDB 1.5.5's iceberg
#                                 extension (.venv-delta-duckdb, mk/delta.mk) read the tables created with options
#                                 (partitioned by every transform, sorted, format version 3): one JVM and one
#                                 Maven classpath resolution for all of them; and both read a table after
#                                 expiry, rewrite_data_files and rewrite_manifests at every retained snapshot
#   make iceberg-rest-check       the conformance suite against Iceberg's own REST catalog server
#                                 (RESTCatalogServer from the iceberg-open-api test fixtures)
#   make iceberg-postgres-check   the conformance suite with the SQL catalog on a throwaway PostgreSQL
#   make iceberg-fuzz             the receipt decoder fuzz target for ICEBERG_FUZZTIME (default 30s)
ICEBERG_PY := $(CURDIR)/.venv/bin/python
ICEBERG_FUZZTIME ?= 30s

TEST_TARGETS += iceberg-pyiceberg-check iceberg-rest-check iceberg-postgres-check

.PHONY: iceberg-pyiceberg-check iceberg-rest-check iceberg-postgres-check iceberg-fuzz

# .venv/.installed is built by mk/python.mk (its requirements carry pyiceberg), the DuckDB venv with
# its iceberg extension by mk/delta.mk (included before this file).
iceberg-pyiceberg-check: .venv/.installed $(DELTA_DUCKDB_VENV)/.installed
	FLIGHTGW_PYTHON=$(ICEBERG_PY) FLIGHTGW_ICEBERG_JAVA=1 FLIGHTGW_ICEBERG_DUCKDB=$(CURDIR)/$(DELTA_DUCKDB_VENV)/bin/python \
	  $(GO) test -count=1 -run '^(TestPyIcebergInterop|TestPyIcebergReadsReplace|TestPyIcebergReadsRacedCommitOnce|TestPyIcebergReadsV3Nanos|TestReadersAgreeOnEveryType|TestOtherReadersReadTableOptions|TestOtherReadersReadMaintainedTable)$$' -v ./catalogs/iceberg

# Needs java 17+, mvn and curl; the server's jars come from Maven Central.
iceberg-rest-check:
	GO=$(GO) bash integration/iceberg-rest/run.sh

# Needs PostgreSQL's server binaries (skipped with a message when absent).
iceberg-postgres-check:
	GO=$(GO) bash catalogs/iceberg/testdata/postgres.sh

iceberg-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReceipt$$' -fuzztime $(ICEBERG_FUZZTIME) ./catalogs/iceberg
