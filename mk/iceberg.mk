# Iceberg backend (catalogs/iceberg) checks beyond the Go unit tests:
#   make iceberg-pyiceberg-check  pyiceberg's SqlCatalog reads and appends to the embedded lake, reads a replaced table,
#                                 and reads each row once after two replicas raced one payload;
#                                 pyiceberg, DuckDB, pyarrow and Iceberg Java (needs java 17+, mvn) read a table
#                                 of every type alike, with its metrics
#   make iceberg-rest-check       the conformance suite against Iceberg's own REST catalog server
#                                 (RESTCatalogServer from the iceberg-open-api test fixtures)
#   make iceberg-postgres-check   the conformance suite with the SQL catalog on a throwaway PostgreSQL
#   make iceberg-fuzz             the receipt decoder fuzz target for ICEBERG_FUZZTIME (default 30s)
ICEBERG_PY := $(CURDIR)/.venv/bin/python
ICEBERG_FUZZTIME ?= 30s

TEST_TARGETS += iceberg-pyiceberg-check iceberg-rest-check iceberg-postgres-check

.PHONY: iceberg-pyiceberg-check iceberg-rest-check iceberg-postgres-check iceberg-fuzz

# .venv/.installed is built by mk/python.mk (its requirements carry pyiceberg).
iceberg-pyiceberg-check: .venv/.installed
	FLIGHTGW_PYTHON=$(ICEBERG_PY) FLIGHTGW_ICEBERG_JAVA=1 $(GO) test -count=1 -run '^(TestPyIcebergInterop|TestPyIcebergReadsReplace|TestPyIcebergReadsRacedCommitOnce|TestReadersAgreeOnEveryType)$$' -v ./catalogs/iceberg

# Needs java 17+, mvn and curl; the server's jars come from Maven Central.
iceberg-rest-check:
	GO=$(GO) bash integration/iceberg-rest/run.sh

# Needs PostgreSQL's server binaries (skipped with a message when absent).
iceberg-postgres-check:
	GO=$(GO) bash catalogs/iceberg/testdata/postgres.sh

iceberg-fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReceipt$$' -fuzztime $(ICEBERG_FUZZTIME) ./catalogs/iceberg
