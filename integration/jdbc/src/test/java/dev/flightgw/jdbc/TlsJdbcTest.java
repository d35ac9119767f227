package dev.flightgw.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The JDBC driver against a gateway serving TLS that requires client certificates (tls.client_ca_file): it connects
 * with useEncryption, tlsRootCerts, clientCertificate and clientKey; without a client certificate, or without
 * encryption, it is refused.
 */
class TlsJdbcTest {
  private static TestGateway gateway;
  private static Path certs;

  @BeforeAll
  static void startGateway() throws Exception {
    Path dir = Files.createTempDirectory("flightgw-jdbc-tls");
    certs = Files.createDirectories(dir.resolve("certs"));
    TestGateway.writeCertificates(certs);
    gateway = TestGateway.start(dir, String.join("\n",
        "tls:",
        "  cert_file: " + certs.resolve("server.pem"),
        "  key_file: " + certs.resolve("server-key.pem"),
        "  client_ca_file: " + certs.resolve("ca.pem"),
        ""), certs);
  }

  @AfterAll
  static void stopGateway() throws Exception {
    if (gateway != null) {
      gateway.close();
    }
  }

  private static String url(String params) {
    return "jdbc:arrow-flight-sql://127.0.0.1:" + gateway.port + "?" + params;
  }

  private static String tlsParams(boolean clientCertificate) {
    String p = "useEncryption=true&tlsRootCerts=" + certs.resolve("ca.pem");
    if (clientCertificate) {
      p += "&clientCertificate=" + certs.resolve("client.pem") + "&clientKey=" + certs.resolve("client-key.pem");
    }
    return p;
  }

  @Test
  void queriesOverMutualTls() throws Exception {
    try (Connection c = DriverManager.getConnection(url(tlsParams(true)));
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*), sum(qty) FROM sales")) {
      assertTrue(rs.next());
      assertEquals(1000, rs.getLong(1));
      assertEquals(4500, rs.getLong(2));
    }
  }

  @Test
  void refusedWithoutClientCertificate() {
    assertThrows(Exception.class, () -> {
      try (Connection c = DriverManager.getConnection(url(tlsParams(false)));
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT count(*) FROM sales")) {
        rs.next();
      }
    });
  }

  @Test
  void refusedWithoutEncryption() {
    assertThrows(Exception.class, () -> {
      try (Connection c = DriverManager.getConnection(url("useEncryption=false"));
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT count(*) FROM sales")) {
        rs.next();
      }
    });
  }
}
