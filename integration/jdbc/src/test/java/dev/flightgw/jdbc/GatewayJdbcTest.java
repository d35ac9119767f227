package dev.flightgw.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Time;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Arrow Flight SQL JDBC driver, as DBeaver, Tableau or Superset load
 * it, against a real gateway: metadata, queries, prepared statements and
 * INSERT. The gateway is started from FLIGHTGW_BIN on a free port, and the
 * tables are written by FLIGHTGW_SEED (see seed/main.go for their content).
 */
class GatewayJdbcTest {
  private static TestGateway gateway;

  @BeforeAll
  static void startGateway() throws Exception {
    // Row-local queries over the two-file sales table come back as several
    // endpoints, which the driver reads one after another.
    gateway = TestGateway.start(Files.createTempDirectory("flightgw-jdbc"),
        "engine:\n  max_endpoints: 4\n  split_min_bytes: 1\n");
  }

  @AfterAll
  static void stopGateway() throws Exception {
    if (gateway != null) {
      gateway.close();
    }
  }

  private static Connection connect() throws SQLException {
    return DriverManager.getConnection(gateway.url());
  }

  /** Renders every row as "a|b|c" and closes the result set. */
  private static List<String> rows(ResultSet rs) throws SQLException {
    try (rs) {
      return render(rs);
    }
  }

  private static List<String> render(ResultSet rs) throws SQLException {
    List<String> out = new ArrayList<>();
    int n = rs.getMetaData().getColumnCount();
    while (rs.next()) {
      StringBuilder b = new StringBuilder();
      for (int i = 1; i <= n; i++) {
        if (i > 1) {
          b.append('|');
        }
        b.append(rs.getString(i));
      }
      out.add(b.toString());
    }
    return out;
  }

  private static List<String> query(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      return rows(rs);
    }
  }

  /** Methods whose absence the JDBC spec allows; none is expected to fail here. */
  private static final Set<String> SKIP = Set.of("getConnection", "unwrap", "isWrapperFor");

  @Test
  void everyMetadataGetterAnswers() throws Exception {
    try (Connection c = connect()) {
      DatabaseMetaData md = c.getMetaData();
      List<String> failures = new ArrayList<>();
      int called = 0;
      for (Method m : DatabaseMetaData.class.getMethods()) {
        if (m.getParameterCount() != 0 || SKIP.contains(m.getName())) {
          continue;
        }
        called++;
        try {
          Object v = m.invoke(md);
          if (v instanceof ResultSet rs) {
            rows(rs);
          }
        } catch (InvocationTargetException e) {
          failures.add(m.getName() + ": " + e.getCause());
        }
      }
      assertTrue(called > 100, "only " + called + " getters found");
      assertEquals(List.of(), failures);
      assertTrue(md.supportsTransactions());
      assertTrue(md.supportsBatchUpdates());
      assertEquals("\"", md.getIdentifierQuoteString());
    }
  }

  @Test
  void catalogsSchemasTablesColumnsKeysTypes() throws Exception {
    try (Connection c = connect()) {
      DatabaseMetaData md = c.getMetaData();
      assertEquals(List.of("lake"), rows(md.getCatalogs()).stream().map(r -> r.split("\\|")[0]).toList());
      assertTrue(rows(md.getSchemas()).stream().anyMatch(r -> r.startsWith("default|lake")), "schemas");
      List<String> tables = rows(md.getTables(null, null, "%", null));
      assertTrue(tables.stream().anyMatch(r -> r.startsWith("lake|default|sales|TABLE")), tables.toString());
      List<String> cols = new ArrayList<>();
      try (ResultSet rs = md.getColumns("lake", "default", "sales", "%")) {
        while (rs.next()) {
          cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getInt("DATA_TYPE"));
        }
      }
      assertEquals(List.of("id:-5", "region:12", "amount:8", "qty:4"), cols);
      assertEquals(List.of(), rows(md.getPrimaryKeys("lake", "default", "sales")));
      assertEquals(List.of(), rows(md.getImportedKeys("lake", "default", "sales")));
      assertEquals(List.of(), rows(md.getExportedKeys("lake", "default", "sales")));
      assertEquals(List.of(), rows(md.getCrossReference("lake", "default", "sales", "lake", "default", "regions")));
      // The 18.3 driver answers getTypeInfo from Avatica (no rows) without
      // asking the server; it must still answer.
      rows(md.getTypeInfo());
      assertEquals(List.of("TABLE"), rows(md.getTableTypes()));
    }
  }

  @Test
  void queries() throws Exception {
    try (Connection c = connect()) {
      // Sums over id 0..999: amount = 1.5 * id, qty = id % 10.
      assertEquals(List.of("1000|499500|749250.0|4500"),
          query(c, "SELECT count(*), sum(id), sum(amount), sum(qty) FROM lake.\"default\".sales"));
      assertEquals(List.of("apac|333|cho", "eu|334|ann", "us|333|bob"),
          query(c, "SELECT s.region, count(*), r.manager FROM sales s JOIN regions r ON s.region = r.region "
              + "GROUP BY s.region, r.manager ORDER BY s.region"));
      assertEquals(List.of("999", "998", "997"), query(c, "SELECT id FROM sales ORDER BY id DESC LIMIT 3"));
      assertEquals(List.of("4.5"), query(c, "SELECT avg(qty) FROM \"default\".sales WHERE id < 10"));
      // Row-local: split into one endpoint per data file, read in turn.
      List<String> ids = query(c, "SELECT id, region FROM sales WHERE qty <> 3");
      assertEquals(900, ids.size());
      assertEquals(999L * 1000 / 2 - (3L + 993) * 100 / 2,
          ids.stream().mapToLong(r -> Long.parseLong(r.split("\\|")[0])).sum());
      SQLException e = assertThrows(SQLException.class, () -> query(c, "SELECT * FROM no_such_table"));
      assertTrue(e.getMessage().contains("no_such_table"), e.getMessage());
      e = assertThrows(SQLException.class, () -> query(c, "SELEC 1"));
      assertTrue(e.getMessage().toLowerCase().contains("syntax"), e.getMessage());
    }
  }

  @Test
  void preparedStatementWithParameters() throws Exception {
    try (Connection c = connect();
        PreparedStatement ps = c.prepareStatement("SELECT count(*), min(id) FROM sales WHERE region = ? AND id >= ?")) {
      ps.setString(1, "us");
      ps.setLong(2, 500);
      try (ResultSet rs = ps.executeQuery()) {
        assertEquals(List.of("166|502"), rows(rs));
      }
      ps.setString(1, "eu");
      ps.setLong(2, 990);
      try (ResultSet rs = ps.executeQuery()) {
        assertEquals(List.of("4|990"), rows(rs));
      }
    }
  }

  @Test
  void insertsAndSetCatalog() throws Exception {
    try (Connection c = connect()) {
      c.setCatalog("lake");
      try (Statement s = c.createStatement()) {
        assertEquals(2, s.executeUpdate("INSERT INTO regions VALUES ('mars', 'zed'), ('moon', 'yan')"));
        assertThrows(SQLException.class, () -> s.executeUpdate("DELETE FROM regions"));
      }
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO regions (region, manager) VALUES (?, ?)")) {
        for (int i = 0; i < 5; i++) {
          ps.setString(1, "r" + i);
          ps.setString(2, "m" + i);
          ps.addBatch();
        }
        int[] counts = ps.executeBatch();
        int total = 0;
        for (int n : counts) {
          total += n;
        }
        assertEquals(5, total);
      }
      assertEquals(List.of("10"), query(c, "SELECT count(*) FROM regions"));
      assertEquals(List.of("zed"), query(c, "SELECT manager FROM regions WHERE region = 'mars'"));
    }
  }

  /** Each column as "name(precision,scale) catalog.schema.table". */
  private static List<String> columns(ResultSetMetaData md) throws SQLException {
    List<String> out = new ArrayList<>();
    for (int i = 1; i <= md.getColumnCount(); i++) {
      out.add(md.getColumnName(i) + "(" + md.getPrecision(i) + "," + md.getScale(i) + ") "
          + md.getCatalogName(i) + "." + md.getSchemaName(i) + "." + md.getTableName(i));
    }
    return out;
  }

  @Test
  void resultSetMetaDataOfEveryType() throws Exception {
    List<String> want = List.of(
        "b(1,0) lake.default.alltypes", "i(10,0) lake.default.alltypes", "l(19,0) lake.default.alltypes",
        "f(7,0) lake.default.alltypes", "d(15,0) lake.default.alltypes", "d10(10,2) lake.default.alltypes",
        "d38(38,10) lake.default.alltypes", "s(2147483647,0) lake.default.alltypes",
        "bin(2147483647,0) lake.default.alltypes", "dt(10,0) lake.default.alltypes",
        "tm(15,6) lake.default.alltypes", "ts(26,6) lake.default.alltypes", "tstz(32,6) lake.default.alltypes");
    try (Connection c = connect()) {
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM alltypes")) {
        assertEquals(want, columns(rs.getMetaData()));
        assertEquals(1, render(rs).size());
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT * FROM alltypes WHERE i = ?")) {
        assertEquals(want, columns(ps.getMetaData()));
        ps.setInt(1, 1);
        try (ResultSet rs = ps.executeQuery()) {
          assertEquals(want, columns(rs.getMetaData()));
        }
      }
      // Through aliases and a join; computed decimals have their real
      // precision and scale, and no table.
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT a.d10 AS price, r.manager, sum(a.d10) AS total, a.d10 * 2 AS twice "
              + "FROM alltypes a CROSS JOIN regions r GROUP BY ALL")) {
        assertEquals(List.of("price(10,2) lake.default.alltypes", "manager(2147483647,0) lake.default.regions",
            "total(38,2) null.null.null", "twice(18,2) null.null.null"), columns(rs.getMetaData()));
      }
    }
  }

  @Test
  void upperAndMixedCaseNames() throws Exception {
    try (Connection c = connect()) {
      // As sqlline writes them: the driver reports upper-case identifiers.
      assertEquals(List.of("1"), query(c, "SELECT count(*) FROM ALLTYPES"));
      assertEquals(List.of("1"), query(c, "SELECT COUNT(*) FROM \"LAKE\".\"DEFAULT\".\"ALLTYPES\""));
      assertEquals(List.of("1"), query(c, "SELECT count(*) FROM Lake.Default.AllTypes"));
      assertEquals(List.of("1000"), query(c, "SELECT count(*) FROM SALES S JOIN REGIONS R ON S.REGION = R.REGION"));
      try (PreparedStatement ps = c.prepareStatement("SELECT MANAGER FROM LAKE.\"default\".REGIONS WHERE REGION = ?")) {
        ps.setString(1, "eu");
        try (ResultSet rs = ps.executeQuery()) {
          assertEquals(List.of("ann"), rows(rs));
        }
      }
    }
  }

  /** default is a reserved word in DuckDB; Spark and pyiceberg users write default.t unquoted. */
  @Test
  void defaultSchemaUnquoted() throws Exception {
    try (Connection c = connect()) {
      assertEquals(List.of("1000"), query(c, "SELECT count(*) FROM default.sales"));
      assertEquals(List.of("1000"), query(c, "SELECT count(*) FROM lake.default.sales"));
      assertEquals(List.of("1000"), query(c, "SELECT COUNT(*) FROM DEFAULT.SALES"));
      assertEquals(List.of("1000"),
          query(c, "SELECT count(*) FROM default.sales s JOIN default.regions r ON s.region = r.region"));
      try (PreparedStatement ps = c.prepareStatement("SELECT manager FROM default.regions WHERE region = ?")) {
        ps.setString(1, "eu");
        assertEquals(1, rows(ps.executeQuery()).size());
      }
      SQLException e = assertThrows(SQLException.class, () -> query(c, "SELECT * FROM default.no_such_table"));
      assertTrue(e.getMessage().contains("default.no_such_table"), e.getMessage());
    }
  }

  /**
   * README.md's Java example, as written but for the port: compiled here, run in a JVM of its own with the
   * flag the README gives, on the driver's class path.
   */
  @Test
  void readmeJavaExampleRuns() throws Exception {
    String readme = Files.readString(Path.of("..", "..", "README.md"));
    Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(readme);
    assertTrue(m.find(), "README.md has no Java example");
    Matcher flag = Pattern.compile("JDK_JAVA_OPTIONS=(\\S+)").matcher(readme);
    assertTrue(flag.find(), "README.md gives no JDK_JAVA_OPTIONS");
    String snippet = m.group(1).replace("jdbc:arrow-flight-sql://127.0.0.1:32010?useEncryption=false", gateway.url());
    Path dir = Files.createTempDirectory("readme-java");
    Path src = dir.resolve("ReadmeExample.java");
    Files.writeString(src, "import java.sql.*;\n\npublic class ReadmeExample {\n  public static void main(String[] args) throws Exception {\n"
        + snippet + "  }\n}\n");
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertEquals(0, javac.run(null, null, null, "-d", dir.toString(), src.toString()), "the README's Java example does not compile");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb = new ProcessBuilder(java, "-cp", dir + File.pathSeparator + System.getProperty("java.class.path"), "ReadmeExample")
        .redirectErrorStream(true);
    pb.environment().put("JDK_JAVA_OPTIONS", flag.group(1));
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes());
    assertEquals(0, p.waitFor(), out);
    assertTrue(out.strip().endsWith("\n3") || out.strip().equals("3"), out);
  }

  @Test
  void informationSchemaAsSupersetReadsIt() throws Exception {
    try (Connection c = connect()) {
      // The inspector's get_schema_names, get_table_names and get_columns.
      assertTrue(query(c, "SELECT schema_name FROM information_schema.schemata ORDER BY schema_name").contains("default"));
      try (PreparedStatement ps = c.prepareStatement("SELECT table_name FROM information_schema.tables "
          + "WHERE table_schema = ? AND table_type = 'BASE TABLE' ORDER BY table_name")) {
        ps.setString(1, "default");
        try (ResultSet rs = ps.executeQuery()) {
          assertEquals(List.of("alltypes", "events", "people", "regions", "sales"), rows(rs));
        }
      }
      assertEquals(List.of("id|BIGINT|NO|null|1", "region|VARCHAR|YES|null|2", "amount|DOUBLE|YES|null|3",
              "qty|INTEGER|YES|null|4"),
          query(c, "SELECT column_name, data_type, is_nullable, column_default, ordinal_position "
              + "FROM information_schema.columns WHERE table_schema = 'default' AND table_name = 'sales' "
              + "ORDER BY ordinal_position"));
      assertEquals(List.of("d10|DECIMAL(10,2)|10|2"),
          query(c, "SELECT c.column_name, c.data_type, c.numeric_precision, c.numeric_scale "
              + "FROM information_schema.tables t JOIN information_schema.columns c "
              + "ON c.table_catalog = t.table_catalog AND c.table_schema = t.table_schema AND c.table_name = t.table_name "
              + "WHERE t.table_name = 'alltypes' AND c.column_name = 'd10'"));
    }
  }

  @Test
  void timestampAndTimeParametersAreExact() throws Exception {
    // The driver writes setTimestamp/setTime milliseconds unscaled into the
    // declared vector (apache/arrow-java#838): the gateway declares them
    // in milliseconds, so they land exactly, not in 1970.
    Timestamp ts = Timestamp.valueOf("2024-02-29 12:34:56.789");
    Time tm = new Time(Time.valueOf("12:34:56").getTime() + 789);
    try (Connection c = connect()) {
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO events (id, ts, tm) VALUES (?, ?, ?)")) {
        ps.setLong(1, 1);
        ps.setTimestamp(2, ts);
        ps.setTime(3, tm);
        assertEquals(1, ps.executeUpdate());
      }
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT ts, tm, CAST(ts AS VARCHAR), CAST(tm AS VARCHAR) FROM events WHERE id = 1")) {
        assertTrue(rs.next());
        assertEquals(ts, rs.getTimestamp(1));
        assertEquals(tm.getTime(), rs.getTime(2).getTime());
        assertEquals("2024-02-29 12:34:56.789", rs.getString(3));
        assertEquals("12:34:56.789", rs.getString(4));
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT id FROM events WHERE ts = ? AND tm = ?")) {
        ps.setTimestamp(1, ts);
        ps.setTime(2, tm);
        try (ResultSet rs = ps.executeQuery()) {
          assertEquals(List.of("1"), rows(rs));
        }
      }
    }
  }
}
