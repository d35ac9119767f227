# JDBC end-to-end tests: the Arrow Flight SQL JDBC driver 18.3.0 (19.0.0 is not on Maven Central) from Maven
# Central (Java 17) against bin/flightgw; tables are seeded through ADBC by
# integration/jdbc/seed.
SEED_BIN := bin/flightgw-jdbc-seed

.PHONY: test-jdbc
test-jdbc: build
	$(GO) build -o $(SEED_BIN) ./integration/jdbc/seed
	cd integration/jdbc && FLIGHTGW_BIN=$(abspath $(BIN)) FLIGHTGW_SEED=$(abspath $(SEED_BIN)) mvn -q -B test

TEST_TARGETS += test-jdbc
