// Reads Iceberg tables with Iceberg Java and prints, one JSON object a line
// for each table, what it sees: the format version, the partition spec
// and sort order as Java parses them, the rows (IcebergGenerics), each data
// file with its partition, the partitions its rows fall in (Java's
// PartitionKey) and whether its rows are in the sort order, the snapshots'
// row ranges, each row's row-lineage metadata columns on v3, and, for each
// filter, the files planned and the rows read with it. Values are spelled
// as readers_check.py spells them (NaN as "NaN", instants in UTC as
// Python's isoformat, nanoseconds when there are any, bytes in hex,
// decimals and dates as strings). Run by javaRows and
// TestOtherReadersReadTableOptions, one JVM for every table:
//     java -cp $(mvn dependency:build-classpath) Read.java <metadata.json>[@<filter>]...
// A filter is col>=v, col<v, col=v or col^=v (starts with); a v of digits
// is a long, anything else a string Iceberg converts to the column's type.
// An argument <metadata.json>#<snapshot-id> is time travel instead: it
// prints {"snapshot": id, "rows": [...] read at that snapshot (useSnapshot),
// "snapshots": [every snapshot id the metadata keeps]} (javaAt, run by
// TestOtherReadersReadMaintainedTable).
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SortField;
import org.apache.iceberg.SortOrderComparators;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.DateTimeUtil;

public class Read {
  public static void main(String[] args) throws Exception {
    for (String arg : args) {
      int hash = arg.lastIndexOf('#');
      if (hash > 0) {
        Table table = new BaseTable(new StaticTableOperations(arg.substring(0, hash), new HadoopFileIO(new Configuration())), "t");
        System.out.println(at(table, Long.parseLong(arg.substring(hash + 1))));
        continue;
      }
      String[] parts = arg.split("@");
      Table table = new BaseTable(new StaticTableOperations(parts[0], new HadoopFileIO(new Configuration())), "t");
      List<Expression> filters = new ArrayList<>();
      for (int i = 1; i < parts.length; i++) filters.add(filter(parts[i]));
      System.out.println(inspect(table, filters));
    }
  }

  // at reads the table as of snapshot id, as a time-travel query does.
  static String at(Table table, long id) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("snapshot", id);
    out.put("rows", new Raw(rows(IcebergGenerics.read(table).useSnapshot(id).build())));
    List<Object> snaps = new ArrayList<>();
    for (Snapshot s : table.snapshots()) snaps.add(s.snapshotId());
    out.put("snapshots", snaps);
    return json(out);
  }

  static Expression filter(String f) {
    for (String op : new String[] {">=", "^=", "=", "<"}) {
      int at = f.indexOf(op);
      if (at < 0) continue;
      String col = f.substring(0, at), s = f.substring(at + op.length());
      Object v = s.matches("-?[0-9]+") ? (Object) Long.valueOf(s) : s;
      switch (op) {
        case ">=": return Expressions.greaterThanOrEqual(col, v);
        case "<": return Expressions.lessThan(col, v);
        case "=": return Expressions.equal(col, v);
        default: return Expressions.startsWith(col, s);
      }
    }
    throw new IllegalArgumentException("filter " + f);
  }

  static String inspect(Table table, List<Expression> filters) throws Exception {
    TableMetadata meta = ((BaseTable) table).operations().current();
    Schema schema = table.schema();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("format_version", meta.formatVersion());
    List<String> spec = new ArrayList<>();
    for (PartitionField f : table.spec().fields()) spec.add(f.name() + "=" + f.transform() + "(" + schema.findColumnName(f.sourceId()) + ")");
    out.put("spec", spec);
    out.put("sort_order_id", table.sortOrder().orderId());
    List<String> sort = new ArrayList<>();
    for (SortField f : table.sortOrder().fields()) sort.add(schema.findColumnName(f.sourceId()) + " " + f.direction() + " " + f.nullOrder());
    out.put("sort", sort);
    out.put("rows", new Raw(rows(IcebergGenerics.read(table).build())));

    // Each file's rows, in file order (_pos), with their partition as
    // Java computes it from the row.
    Schema withPos = TypeUtil.join(schema, new Schema(MetadataColumns.FILE_PATH, MetadataColumns.ROW_POSITION));
    Map<String, List<Record>> byFile = new TreeMap<>();
    try (CloseableIterable<Record> rs = IcebergGenerics.read(table).project(withPos).build()) {
      for (Record r : rs) byFile.computeIfAbsent(r.getField("_file").toString(), k -> new ArrayList<>()).add(r.copy());
    }
    Internal wrap = new Internal(withPos.asStruct());
    Comparator<StructLike> order = table.sortOrder().isSorted() ? SortOrderComparators.forSchema(withPos, table.sortOrder()) : null;
    List<Object> files = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        DataFile df = task.file();
        Map<String, Object> f = new LinkedHashMap<>();
        String path = df.location();
        f.put("path", path);
        f.put("rows", df.recordCount());
        f.put("partition", partition(table.specs().get(df.specId()), df.partition()));
        f.put("sort_order_id", df.sortOrderId());
        f.put("first_row_id", df.firstRowId());
        f.put("data_sequence_number", df.dataSequenceNumber());
        List<Record> rs = byFile.getOrDefault(path, List.of());
        Set<String> seen = new TreeSet<>();
        PartitionKey key = new PartitionKey(table.specs().get(df.specId()), withPos);
        boolean sorted = true;
        for (int i = 0; i < rs.size(); i++) {
          key.partition(wrap.wrap(rs.get(i)));
          seen.add(json(partition(table.specs().get(df.specId()), key)));
          if (order != null && i > 0 && order.compare(wrap.copyFor(rs.get(i - 1)), wrap.copyFor(rs.get(i))) > 0) sorted = false;
        }
        f.put("rows_read", rs.size());
        f.put("row_partitions", new Raw("[" + String.join(",", seen) + "]"));
        f.put("sorted", sorted);
        files.add(f);
      }
    }
    out.put("files", files);

    List<Object> snaps = new ArrayList<>();
    for (Snapshot s : table.snapshots()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("sequence_number", s.sequenceNumber());
      m.put("first_row_id", s.firstRowId());
      m.put("added_rows", s.addedRows());
      snaps.add(m);
    }
    out.put("snapshots", snaps);
    if (meta.formatVersion() >= 3) {
      out.put("next_row_id", meta.nextRowId());
      Schema lineage = TypeUtil.join(schema, new Schema(MetadataColumns.FILE_PATH, MetadataColumns.ROW_POSITION,
          MetadataColumns.ROW_ID, MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER));
      out.put("lineage", new Raw(rows(IcebergGenerics.read(table).project(lineage).build())));
    }

    List<Object> fs = new ArrayList<>();
    for (Expression e : filters) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("filter", e.toString());
      int planned = 0;
      try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(e).planFiles()) {
        for (FileScanTask t : tasks) planned++;
      }
      m.put("files_planned", planned);
      try {
        m.put("rows", new Raw(rows(IcebergGenerics.read(table).where(e).build())));
      } catch (IllegalStateException err) {
        // Iceberg Java 1.10's generic reader cannot evaluate a residual
        // on a timestamp_ns column (apache/iceberg#14973, fixed after
        // 1.10.1): say so, and filter the rows of the files Java plans
        // with Java's Evaluator over the values it should have used.
        m.put("where_error", err.getMessage());
        Set<String> keep = new TreeSet<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(e).planFiles()) {
          for (FileScanTask t : tasks) keep.add(t.file().location());
        }
        Evaluator eval = new Evaluator(withPos.asStruct(), e);
        StringBuilder b = new StringBuilder("[");
        for (Map.Entry<String, List<Record>> f : byFile.entrySet()) {
          if (!keep.contains(f.getKey())) continue;
          for (Record r : f.getValue()) {
            if (!eval.eval(wrap.wrap(r))) continue;
            Record plain = GenericRecord.create(schema);
            for (Types.NestedField c : schema.columns()) plain.setField(c.name(), r.getField(c.name()));
            b.append(b.length() > 1 ? "," : "").append(json(plain));
          }
        }
        m.put("rows", new Raw(b.append(']').toString()));
      }
      fs.add(m);
    }
    out.put("filters", fs);
    return json(out);
  }

  // partition renders a partition tuple as a list in the spec's order.
  static List<Object> partition(PartitionSpec spec, StructLike p) {
    List<Object> l = new ArrayList<>();
    Types.StructType type = spec.partitionType();
    for (int i = 0; i < type.fields().size(); i++) l.add(p.get(i, type.fields().get(i).type().typeId().javaClass()));
    return l;
  }

  static String rows(CloseableIterable<Record> rows) throws Exception {
    StringBuilder out = new StringBuilder("[");
    try (rows) {
      for (Record r : rows) {
        if (out.length() > 1) out.append(',');
        out.append(json(r));
      }
    }
    return out.append(']').toString();
  }

  // Internal shows a generic record's values in Iceberg's internal
  // representation, as partition transforms and sort comparators take
  // them. Iceberg Java 1.10's InternalRecordWrapper does this but leaves
  // timestamp_ns values as objects (its PartitionKey then fails on them).
  static final class Internal implements StructLike {
    private final List<Types.NestedField> fields;
    private StructLike row;

    Internal(Types.StructType type) {
      this.fields = type.fields();
    }

    Internal wrap(StructLike r) {
      row = r;
      return this;
    }

    Internal copyFor(StructLike r) {
      return new Internal(Types.StructType.of(fields)).wrap(r);
    }

    public int size() {
      return fields.size();
    }

    public <T> T get(int pos, Class<T> javaClass) {
      Object v = row.get(pos, Object.class);
      boolean nanos = fields.get(pos).type().typeId() == Type.TypeID.TIMESTAMP_NANO;
      if (v instanceof OffsetDateTime t) v = nanos ? DateTimeUtil.nanosFromTimestamptz(t) : DateTimeUtil.microsFromTimestamptz(t);
      else if (v instanceof LocalDateTime t) v = nanos ? DateTimeUtil.nanosFromTimestamp(t) : DateTimeUtil.microsFromTimestamp(t);
      else if (v instanceof LocalDate d) v = DateTimeUtil.daysFromDate(d);
      else if (v instanceof LocalTime t) v = DateTimeUtil.microsFromTime(t);
      return javaClass.cast(v);
    }

    public <T> void set(int pos, T value) {
      throw new UnsupportedOperationException("read only");
    }
  }

  // Raw is JSON already rendered.
  record Raw(String json) {}

  static final DateTimeFormatter SECONDS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss");
  static final DateTimeFormatter MICROS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS");

  static final DateTimeFormatter NANOS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS");

  static String iso(LocalDateTime t) {
    return (t.getNano() == 0 ? SECONDS : t.getNano() % 1000 == 0 ? MICROS : NANOS).format(t);
  }

  static String json(Object v) {
    if (v == null) return "null";
    if (v instanceof Raw r) return r.json();
    if (v instanceof Record r) {
      StringBuilder b = new StringBuilder("{");
      List<Types.NestedField> fs = r.struct().fields();
      for (int i = 0; i < fs.size(); i++) {
        if (i > 0) b.append(',');
        b.append(quote(fs.get(i).name())).append(':').append(json(r.get(i)));
      }
      return b.append('}').toString();
    }
    if (v instanceof LinkedHashMap<?, ?> m) {
      StringBuilder b = new StringBuilder("{");
      m.forEach((k, x) -> b.append(b.length() > 1 ? "," : "").append(quote(String.valueOf(k))).append(':').append(json(x)));
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
    if (v instanceof CharSequence s) return quote(s.toString());
    return v.toString(); // booleans and numbers
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c)); // ASCII whatever the JVM's stdout encoding
      else b.append(c);
    }
    return b.append('"').toString();
  }
}
