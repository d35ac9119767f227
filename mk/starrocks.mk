# StarRocks backend (catalogs/starrocks) checks beyond the Go unit tests:
#   make test-starrocks   the conformance suite and the gateway's StarRocks tests against the
#                         StarRocks stand-in (integration/starrocks-standin) on a throwaway MariaDB
#                         (installed from Debian when missing; skipped with a message when it cannot be)
TEST_TARGETS += test-starrocks

.PHONY: test-starrocks

test-starrocks:
	GO=$(GO) bash integration/starrocks-standin/run.sh
