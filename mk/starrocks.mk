# StarRocks backend (catalogs/starrocks) checks beyond the Go unit tests:
#   make test-starrocks   the conformance suite and the gateway's StarRocks tests against the
#                         StarRocks stand-in (integration/starrocks-standin) on a throwaway MariaDB
#                         (installed from Debian when missing; skipped with a message when it cannot be),
#                         then StarRocks' Stream Load SDK (integration/starrocks-sdk),
#                         integration/python/test_starrocks.py and the JDBC StarRocksJdbcTest
TEST_TARGETS += test-starrocks

.PHONY: test-starrocks

test-starrocks: build $(VENV)/.installed
	$(GO) build -o $(SEED_BIN) ./integration/jdbc/seed
	GO=$(GO) PYTHON=$(abspath $(PYTHON)) FLIGHTGW_BIN=$(abspath $(BIN)) FLIGHTGW_SEED=$(abspath $(SEED_BIN)) \
	  bash integration/starrocks-standin/run.sh
