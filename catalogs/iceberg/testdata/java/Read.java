// Reads an Iceberg table with Iceberg Java's generic reader and prints its
// rows as one JSON array, spelled as readers_check.py spells them (NaN as
// "NaN", instants in UTC as Python's isoformat, bytes in hex, decimals and
// dates as strings). Run by TestReadersAgreeOnEveryType:
//     java -cp $(mvn dependency:build-classpath) Read.java <metadata.json>
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

public class Read {
  public static void main(String[] args) throws Exception {
    Table table = new BaseTable(new StaticTableOperations(args[0], new HadoopFileIO(new Configuration())), "t");
    StringBuilder out = new StringBuilder("[");
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
      for (Record r : rows) {
        if (out.length() > 1) out.append(',');
        out.append(json(r));
      }
    }
    System.out.println(out.append(']'));
  }

  static final DateTimeFormatter SECONDS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss");
  static final DateTimeFormatter MICROS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS");

  static String iso(LocalDateTime t) {
    return (t.getNano() == 0 ? SECONDS : MICROS).format(t);
  }

  static String json(Object v) {
    if (v == null) return "null";
    if (v instanceof Record r) {
      StringBuilder b = new StringBuilder("{");
      List<Types.NestedField> fs = r.struct().fields();
      for (int i = 0; i < fs.size(); i++) {
        if (i > 0) b.append(',');
        b.append(quote(fs.get(i).name())).append(':').append(json(r.get(i)));
      }
      return b.append('}').toString();
    }
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> sorted = new TreeMap<>();
      m.forEach((k, x) -> sorted.put(String.valueOf(k), x));
      StringBuilder b = new StringBuilder("{");
      sorted.forEach((k, x) -> b.append(b.length() > 1 ? "," : "").append(quote(k)).append(':').append(json(x)));
      return b.append('}').toString();
    }
    if (v instanceof List<?> l) {
      StringBuilder b = new StringBuilder("[");
      for (Object x : l) b.append(b.length() > 1 ? "," : "").append(json(x));
      return b.append(']').toString();
    }
    if (v instanceof Float f) v = (double) f;
    if (v instanceof Double d) return d.isNaN() ? "\"NaN\"" : d.toString();
    if (v instanceof ByteBuffer bb) {
      byte[] a = new byte[bb.remaining()];
      bb.duplicate().get(a);
      v = a;
    }
    if (v instanceof byte[] a) {
      StringBuilder b = new StringBuilder("\"");
      for (byte x : a) b.append(String.format("%02x", x));
      return b.append('"').toString();
    }
    if (v instanceof BigDecimal d) return quote(d.toPlainString());
    if (v instanceof OffsetDateTime t) return quote(iso(t.withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime()) + "+00:00");
    if (v instanceof LocalDateTime t) return quote(iso(t));
    if (v instanceof LocalTime t) return quote(t.getNano() == 0 ? t.format(DateTimeFormatter.ofPattern("HH:mm:ss")) : t.format(DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSS")));
    if (v instanceof LocalDate d) return quote(d.toString());
    if (v instanceof String s) return quote(s);
    return v.toString(); // booleans and numbers
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }
}
