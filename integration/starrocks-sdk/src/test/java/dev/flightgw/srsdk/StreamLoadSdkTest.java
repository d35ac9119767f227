package dev.flightgw.srsdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.starrocks.data.load.stream.StreamLoadDataFormat;
import com.starrocks.data.load.stream.StreamLoadSnapshot;
import com.starrocks.data.load.stream.properties.StreamLoadProperties;
import com.starrocks.data.load.stream.properties.StreamLoadTableProperties;
import com.starrocks.data.load.stream.v2.StreamLoadManagerV2;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * StarRocks' Stream Load SDK (com.starrocks:starrocks-stream-load-sdk), used
 * unchanged and as the Flink connector's exactly-once sink uses it
 * (StreamLoadManagerV2 without auto-commit: write, flush, snapshot, prepare,
 * commit or abort), against the cluster FLIGHTGW_STARROCKS_FE names: the
 * stand-in in make test-starrocks, or a real FE. The rows are read back over
 * the MySQL protocol (FLIGHTGW_STARROCKS_MYSQL), so a commit is checked by
 * what the SQL side sees, not by what the HTTP side answered.
 */
class StreamLoadSdkTest {
  static final String DB = "sdk_test";
  static String fe, mysql, user, password;

  @BeforeAll
  static void env() throws Exception {
    fe = System.getenv("FLIGHTGW_STARROCKS_FE");
    mysql = System.getenv("FLIGHTGW_STARROCKS_MYSQL");
    assumeTrue(fe != null && !fe.isEmpty() && mysql != null && !mysql.isEmpty(),
        "FLIGHTGW_STARROCKS_FE and FLIGHTGW_STARROCKS_MYSQL not set");
    // The SDK takes one FE URL; the backend's list is comma-separated.
    fe = fe.split(",")[0].trim();
    if (!fe.startsWith("http://") && !fe.startsWith("https://")) {
      fe = "http://" + fe;
    }
    user = System.getenv().getOrDefault("FLIGHTGW_STARROCKS_USER", "root");
    password = System.getenv().getOrDefault("FLIGHTGW_STARROCKS_PASSWORD", "");
    try (Connection c = sql(); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE IF NOT EXISTS " + DB);
    }
  }

  static Connection sql() throws Exception {
    return DriverManager.getConnection("jdbc:mariadb://" + mysql + "/", user, password);
  }

  static void createTable(String table) throws Exception {
    String replication = System.getenv().getOrDefault("FLIGHTGW_STARROCKS_REPLICATION", "");
    try (Connection c = sql(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + DB + "." + table);
      s.execute("CREATE TABLE " + DB + "." + table + " (`id` INT, `name` STRING) DUPLICATE KEY(`id`) "
          + "DISTRIBUTED BY HASH(`id`)"
          + (replication.isEmpty() ? "" : " PROPERTIES (\"replication_num\" = \"" + replication + "\")"));
    }
  }

  static List<String> rows(String table) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = sql(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id, name FROM " + DB + "." + table + " ORDER BY id")) {
      while (rs.next()) {
        out.add(rs.getInt(1) + ":" + rs.getString(2));
      }
    }
    return out;
  }

  /** A manager in the Flink connector's exactly-once configuration. */
  static StreamLoadManagerV2 manager(String table, String labelPrefix) {
    StreamLoadTableProperties tp = StreamLoadTableProperties.builder()
        .database(DB)
        .table(table)
        .streamLoadDataFormat(StreamLoadDataFormat.JSON)
        .addProperty("format", "json")
        .addProperty("strip_outer_array", "true")
        .build();
    StreamLoadProperties p = StreamLoadProperties.builder()
        .loadUrls(fe)
        .username(user)
        .password(password)
        .version("3.2.0")
        .enableTransaction()
        .labelPrefix(labelPrefix)
        .defaultTableProperties(tp)
        .addHeader("timeout", "600")
        .build();
    StreamLoadManagerV2 m = new StreamLoadManagerV2(p, false);
    m.init();
    return m;
  }

  /** The label states the stand-in's admin endpoint reports ("" on a real cluster). */
  static JsonNode labels() throws Exception {
    String admin = System.getenv("FLIGHTGW_STARROCKS_ADMIN");
    if (admin == null || admin.isEmpty()) {
      return null;
    }
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create(admin.split(",")[0].trim() + "/admin/counts")).build(),
        HttpResponse.BodyHandlers.ofString());
    return new ObjectMapper().readTree(r.body()).get("labels");
  }

  static String state(JsonNode labels, StreamLoadSnapshot snap) {
    assertEquals(1, snap.getTransactions().size(), "one transaction per table: " + snap.getTransactions());
    return labels.path(DB + "/" + snap.getTransactions().get(0).getLabel()).asText();
  }

  @Test
  void commitMakesTheRowsVisible() throws Exception {
    createTable("sdk_commit");
    StreamLoadManagerV2 m = manager("sdk_commit", "sdkc");
    try {
      m.write(null, DB, "sdk_commit", "{\"id\":1,\"name\":\"a\"}", "{\"id\":2,\"name\":\"b \\\"q\\\"\"}");
      m.write(null, DB, "sdk_commit", "{\"id\":3,\"name\":null}");
      m.flush();
      StreamLoadSnapshot snap = m.snapshot();
      assertEquals(List.of(), rows("sdk_commit"), "rows visible before the commit");
      assertTrue(m.prepare(snap), "prepare");
      JsonNode l = labels();
      if (l != null) {
        assertEquals("PREPARED", state(l, snap));
      }
      assertEquals(List.of(), rows("sdk_commit"), "rows visible after prepare");
      assertTrue(m.commit(snap), "commit");
      assertEquals(List.of("1:a", "2:b \"q\"", "3:null"), rows("sdk_commit"));
      l = labels();
      if (l != null) {
        String st = state(l, snap);
        assertTrue(st.equals("VISIBLE") || st.equals("COMMITTED"), "label state " + st);
      }
      assertFalse(m.getException() != null, "manager failed: " + m.getException());
    } finally {
      m.close();
    }
  }

  @Test
  void abortLeavesNothing() throws Exception {
    createTable("sdk_abort");
    StreamLoadManagerV2 m = manager("sdk_abort", "sdka");
    try {
      m.write(null, DB, "sdk_abort", "{\"id\":1,\"name\":\"a\"}", "{\"id\":2,\"name\":\"b\"}");
      m.flush();
      StreamLoadSnapshot snap = m.snapshot();
      assertTrue(m.prepare(snap), "prepare");
      assertTrue(m.abort(snap), "abort");
      assertEquals(List.of(), rows("sdk_abort"));
      JsonNode l = labels();
      if (l != null) {
        assertEquals("ABORTED", state(l, snap));
      }
    } finally {
      m.close();
    }
  }
}
