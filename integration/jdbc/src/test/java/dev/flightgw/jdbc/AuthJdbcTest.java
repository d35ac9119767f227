package dev.flightgw.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The JDBC driver with user and password against a gateway with
 * authentication on: the credentials select the realm, whose catalog the
 * queries and the metadata see.
 */
class AuthJdbcTest {
  private static TestGateway gateway;

  @BeforeAll
  static void startGateway() throws Exception {
    String bin = TestGateway.env("FLIGHTGW_BIN");
    Path dir = Files.createTempDirectory("flightgw-jdbc-auth");
    Process hash = new ProcessBuilder(bin, "hash-password").start();
    hash.getOutputStream().write("s3cret\n".getBytes(StandardCharsets.UTF_8));
    hash.getOutputStream().close();
    String pwHash = new String(hash.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertTrue(hash.waitFor(30, TimeUnit.SECONDS) && hash.exitValue() == 0, "hash-password failed");
    gateway = TestGateway.start(dir, String.join("\n",
        "auth:",
        "  enabled: true",
        "  users:",
        "    - {name: ana, realm: bi, password_hash: \"" + pwHash + "\"}",
        "catalogs:",
        "  - name: warehouse",
        "    type: iceberg",
        "    realm: bi",
        "    properties: {catalog-type: sql, uri: \"sqlite:///" + dir + "/catalog.db\", warehouse: \"file://" + dir
            + "/warehouse\", create-namespaces: default}",
        ""), "ana", "s3cret");
  }

  @AfterAll
  static void stopGateway() throws Exception {
    if (gateway != null) {
      gateway.close();
    }
  }

  private static Connection connect(String user, String password) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user);
    props.setProperty("password", password);
    return DriverManager.getConnection(gateway.url(), props);
  }

  @Test
  void userAndPasswordSeeTheirRealm() throws Exception {
    try (Connection c = connect("ana", "s3cret"); Statement s = c.createStatement()) {
      try (ResultSet rs = s.executeQuery("SELECT count(*), max(id) FROM warehouse.\"default\".sales")) {
        assertTrue(rs.next());
        assertEquals(1000, rs.getLong(1));
        assertEquals(999, rs.getLong(2));
      }
      List<String> catalogs = new ArrayList<>();
      try (ResultSet rs = c.getMetaData().getCatalogs()) {
        while (rs.next()) {
          catalogs.add(rs.getString(1));
        }
      }
      assertEquals(List.of("warehouse"), catalogs);
    }
  }

  @Test
  void wrongPasswordIsRefused() {
    assertThrows(SQLException.class, () -> {
      try (Connection c = connect("ana", "wrong"); Statement s = c.createStatement()) {
        s.executeQuery("SELECT 1").close();
      }
    });
  }
}
