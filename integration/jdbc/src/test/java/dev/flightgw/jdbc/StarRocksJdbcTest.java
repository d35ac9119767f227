package dev.flightgw.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Flight SQL JDBC driver reading StarRocks tables through the gateway. Needs a cluster or the stand-in:
 * make test-starrocks sets FLIGHTGW_STARROCKS_*; without them the tests are skipped. The seed creates a fresh
 * database and ingests its table sales (seed/starrocks.go).
 */
class StarRocksJdbcTest {
  private static final String FE = System.getenv("FLIGHTGW_STARROCKS_FE");
  private static final String MYSQL = System.getenv("FLIGHTGW_STARROCKS_MYSQL");
  private static final String DB = "fgw_jdbc_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private static TestGateway gateway;

  @BeforeAll
  static void start() throws Exception {
    assumeTrue(FE != null && !FE.isEmpty() && MYSQL != null && !MYSQL.isEmpty(),
        "FLIGHTGW_STARROCKS_FE and FLIGHTGW_STARROCKS_MYSQL are not set: run make test-starrocks "
            + "(MariaDB and the StarRocks stand-in), or point them at a cluster");
    String user = System.getenv().getOrDefault("FLIGHTGW_STARROCKS_USER", "root");
    String password = System.getenv().getOrDefault("FLIGHTGW_STARROCKS_PASSWORD", "");
    var dir = Files.createTempDirectory("flightgw-jdbc-sr");
    String config = "catalogs:\n  - name: sr\n    type: starrocks\n    properties:\n"
        + "      fe_http: " + FE + "\n      mysql: " + MYSQL + "\n      user: " + user + "\n"
        + "      password: \"" + password.replace("\\", "\\\\").replace("\"", "\\\"") + "\"\n"
        + "      spool_dir: " + dir + "\n      timeout: 10s\n";
    gateway = TestGateway.start(dir, config, "--starrocks", DB);
  }

  @AfterAll
  static void stop() throws Exception {
    if (gateway == null) {
      return;
    }
    gateway.close();
    Process p = new ProcessBuilder(TestGateway.env("FLIGHTGW_SEED"), "grpc://127.0.0.1:" + gateway.port,
        "--starrocks-drop", DB).inheritIO().start();
    p.waitFor(60, TimeUnit.SECONDS);
  }

  private static List<String> query(Connection c, String sql) throws Exception {
    List<String> out = new ArrayList<>();
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= n; i++) {
          b.append(i > 1 ? "|" : "").append(rs.getString(i));
        }
        out.add(b.toString());
      }
    }
    return out;
  }

  @Test
  void readsATable() throws Exception {
    try (Connection c = DriverManager.getConnection(gateway.url())) {
      assertEquals(List.of("1|eu|1", "2|us|2", "3|eu|3", "4|null|4"),
          query(c, "SELECT id, region, qty FROM sr." + DB + ".sales ORDER BY id"));
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT id, region FROM sr." + DB + ".sales")) {
        ResultSetMetaData md = rs.getMetaData();
        assertEquals(Types.BIGINT, md.getColumnType(1));
        assertEquals(Types.VARCHAR, md.getColumnType(2));
      }
    }
  }

  @Test
  void groupsPushedDown() throws Exception {
    try (Connection c = DriverManager.getConnection(gateway.url())) {
      List<String> got = query(c, "SELECT region, count(*) AS n, sum(qty) AS q FROM sr." + DB
          + ".sales WHERE region IS NOT NULL GROUP BY region");
      got.sort(null);
      assertEquals(List.of("eu|2|4", "us|1|2"), got);
    }
  }
}
