package dev.flightgw.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Flight SQL JDBC driver on a gateway that federates a second gateway (a catalog "up" of type flightsql over
 * the upstream's lake, docs/upstream.md): the upstream's tables are in getTables, getColumns and
 * information_schema like the gateway's own, and query through it.
 */
class UpstreamJdbcTest {
  private static TestGateway upstream;
  private static TestGateway gateway;

  @BeforeAll
  static void start() throws Exception {
    // The upstream answers a row-local query with several endpoints, which
    // the federating gateway reads in parallel.
    upstream = TestGateway.start(Files.createTempDirectory("flightgw-jdbc-up"),
        "engine:\n  max_endpoints: 4\n  split_min_bytes: 1\n");
    Path dir = Files.createTempDirectory("flightgw-jdbc-fed");
    String config = "catalogs:\n"
        + "  - name: lake\n    type: iceberg\n    properties: {catalog-type: sql, uri: \"sqlite:///" + dir
        + "/catalog.db\", warehouse: \"file://" + dir + "/warehouse\", create-namespaces: default}\n"
        + "  - name: up\n    type: flightsql\n    properties:\n      uri: grpc://127.0.0.1:" + upstream.port
        + "\n      upstream_catalog: lake\n";
    gateway = TestGateway.start(dir, config);
  }

  @AfterAll
  static void stop() throws Exception {
    if (gateway != null) {
      gateway.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  private static List<String> rows(ResultSet rs) throws Exception {
    List<String> out = new ArrayList<>();
    try (rs) {
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
  void federatedTablesInMetadata() throws Exception {
    try (Connection c = DriverManager.getConnection(gateway.url())) {
      DatabaseMetaData md = c.getMetaData();
      List<String> cats = rows(md.getCatalogs()).stream().map(r -> r.split("\\|")[0]).toList();
      assertTrue(cats.contains("up"), cats.toString());
      List<String> tables = rows(md.getTables("up", null, "%", null));
      assertTrue(tables.stream().anyMatch(r -> r.startsWith("up|default|sales|TABLE")), tables.toString());
      List<String> cols = new ArrayList<>();
      try (ResultSet rs = md.getColumns("up", "default", "sales", "%")) {
        while (rs.next()) {
          cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getInt("DATA_TYPE"));
        }
      }
      assertEquals(List.of("id:-5", "region:12", "amount:8", "qty:4"), cols);
      try (Statement s = c.createStatement()) {
        assertEquals(List.of("sales"), rows(s.executeQuery("SELECT table_name FROM information_schema.tables "
            + "WHERE table_catalog = 'up' AND table_name = 'sales'")));
      }
    }
  }

  @Test
  void federatedTablesQuery() throws Exception {
    try (Connection c = DriverManager.getConnection(gateway.url()); Statement s = c.createStatement()) {
      assertEquals(List.of("1000|apac"), rows(s.executeQuery(
          "SELECT count(*), min(region) FROM up.\"default\".sales")));
      List<String> ids = rows(s.executeQuery("SELECT id FROM up.\"default\".sales"));
      assertEquals(1000, ids.size());
      assertEquals(1000, ids.stream().distinct().count());
      assertEquals(List.of("2|apac"), rows(s.executeQuery(
          "SELECT s.id, r.region FROM up.\"default\".sales s JOIN lake.\"default\".regions r ON s.region = r.region "
              + "WHERE s.id = 2")));
    }
  }
}
