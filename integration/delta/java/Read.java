// Reads a Delta table with Delta Kernel Java (4.4.0, its default engine) and prints what it
// sees as JSON, like ../read_table.py, one line per argument: {"version", "protocol":
// [reader, writer], "files", "columns", "rows"}, the latest version or the one after the
// last @, rows sorted by the first column, every value rendered as ../render.py renders it.
//
// Usage (the classpath from `mvn dependency:build-classpath` on pom.xml):
//   java -cp <classpath> Read.java <table-dir>[@version]...
//
// It reads the way the kernel's own examples do: the scan files of the snapshot, each data
// file through the engine's Parquet handler with the physical read schema, and
// Scan.transformPhysicalData, which adds the partition columns, maps physical names to
// logical ones and applies deletion vectors (its selection vector).
import io.delta.kernel.Scan;
import io.delta.kernel.Snapshot;
import io.delta.kernel.Table;
import io.delta.kernel.data.ArrayValue;
import io.delta.kernel.data.ColumnVector;
import io.delta.kernel.data.ColumnarBatch;
import io.delta.kernel.data.FilteredColumnarBatch;
import io.delta.kernel.data.MapValue;
import io.delta.kernel.data.Row;
import io.delta.kernel.defaults.engine.DefaultEngine;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.engine.FileReadResult;
import io.delta.kernel.internal.InternalScanFileUtils;
import io.delta.kernel.internal.data.ScanStateRow;
import io.delta.kernel.types.*;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.FileStatus;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.*;
import org.apache.hadoop.conf.Configuration;

public class Read {
  static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS");

  public static void main(String[] args) throws Exception {
    Engine engine = DefaultEngine.create(new Configuration());
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    for (String spec : args) {
      int at = spec.lastIndexOf('@');
      String path = at < 0 ? spec : spec.substring(0, at);
      out.println(read(engine, path, at < 0 ? -1 : Long.parseLong(spec.substring(at + 1))));
    }
    out.flush();
  }

  static String read(Engine engine, String path, long version) throws IOException {
    Table table = Table.forPath(engine, path);
    Snapshot snap = version >= 0
        ? table.getSnapshotAsOfVersion(engine, version)
        : table.getLatestSnapshot(engine);
    Scan scan = snap.getScanBuilder().build();
    Row state = scan.getScanState(engine);
    StructType physical = ScanStateRow.getPhysicalDataReadSchema(state);
    StructType logical = snap.getSchema();
    List<List<Object>> rows = new ArrayList<>();
    int files = 0;
    try (CloseableIterator<FilteredColumnarBatch> scanFiles = scan.getScanFiles(engine)) {
      while (scanFiles.hasNext()) {
        try (CloseableIterator<Row> fileRows = scanFiles.next().getRows()) {
          while (fileRows.hasNext()) {
            Row fileRow = fileRows.next();
            files++;
            FileStatus status = InternalScanFileUtils.getAddFileStatus(fileRow);
            CloseableIterator<ColumnarBatch> data = engine.getParquetHandler()
                .readParquetFiles(single(status), physical, Optional.empty())
                .map(FileReadResult::getData);
            try (CloseableIterator<FilteredColumnarBatch> batches =
                Scan.transformPhysicalData(engine, state, fileRow, data)) {
              while (batches.hasNext()) {
                collect(batches.next(), logical, rows);
              }
            }
          }
        }
      }
    }
    rows.sort(Comparator.comparingLong(r -> Long.parseLong((String) r.get(0))));
    StringBuilder b = new StringBuilder();
    b.append("{\"version\": ").append(snap.getVersion());
    b.append(", \"protocol\": [").append(snap.getProtocol().getMinReaderVersion()).append(", ")
        .append(snap.getProtocol().getMinWriterVersion()).append("]");
    b.append(", \"files\": ").append(files).append(", \"columns\": ");
    List<Object> names = new ArrayList<>();
    for (StructField f : logical.fields()) names.add(f.getName());
    json(b, names);
    b.append(", \"rows\": ");
    json(b, rows);
    b.append("}");
    return b.toString();
  }

  static CloseableIterator<FileStatus> single(FileStatus f) {
    return new CloseableIterator<FileStatus>() {
      boolean done;

      public boolean hasNext() {
        return !done;
      }

      public FileStatus next() {
        done = true;
        return f;
      }

      public void close() throws IOException {}
    };
  }

  static void collect(FilteredColumnarBatch fb, StructType logical, List<List<Object>> rows) {
    ColumnarBatch batch = fb.getData();
    Optional<ColumnVector> sel = fb.getSelectionVector();
    StructType schema = batch.getSchema();
    for (int i = 0; i < batch.getSize(); i++) {
      if (sel.isPresent() && (sel.get().isNullAt(i) || !sel.get().getBoolean(i))) continue;
      List<Object> row = new ArrayList<>();
      for (StructField f : logical.fields()) {
        int k = schema.indexOf(f.getName());
        if (k < 0) throw new IllegalStateException("column " + f.getName() + " not in " + schema);
        row.add(render(batch.getColumnVector(k), i, f.getDataType()));
      }
      rows.add(row);
    }
  }

  static Object render(ColumnVector v, int i, DataType t) {
    if (v.isNullAt(i)) return null;
    if (t instanceof BooleanType) return v.getBoolean(i) ? "true" : "false";
    if (t instanceof ByteType) return Byte.toString(v.getByte(i));
    if (t instanceof ShortType) return Short.toString(v.getShort(i));
    if (t instanceof IntegerType) return Integer.toString(v.getInt(i));
    if (t instanceof LongType) return Long.toString(v.getLong(i));
    if (t instanceof FloatType) return Double.toString((double) v.getFloat(i));
    if (t instanceof DoubleType) return Double.toString(v.getDouble(i));
    if (t instanceof StringType) return v.getString(i);
    if (t instanceof BinaryType) return HexFormat.of().formatHex(v.getBinary(i));
    if (t instanceof DateType) return LocalDate.ofEpochDay(v.getInt(i)).toString();
    if (t instanceof TimestampType || t instanceof TimestampNTZType) {
      long us = v.getLong(i);
      Instant at = Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000);
      return TS.format(LocalDateTime.ofInstant(at, ZoneOffset.UTC));
    }
    if (t instanceof DecimalType) return v.getDecimal(i).toPlainString();
    if (t instanceof StructType) {
      StructType st = (StructType) t;
      Map<String, Object> m = new LinkedHashMap<>();
      for (int k = 0; k < st.length(); k++) {
        m.put(st.at(k).getName(), render(v.getChild(k), i, st.at(k).getDataType()));
      }
      return m;
    }
    if (t instanceof ArrayType) {
      ArrayValue a = v.getArray(i);
      List<Object> l = new ArrayList<>();
      for (int k = 0; k < a.getSize(); k++) {
        l.add(render(a.getElements(), k, ((ArrayType) t).getElementType()));
      }
      return l;
    }
    if (t instanceof MapType) {
      MapValue mv = v.getMap(i);
      List<List<Object>> l = new ArrayList<>();
      for (int k = 0; k < mv.getSize(); k++) {
        l.add(Arrays.asList(render(mv.getKeys(), k, ((MapType) t).getKeyType()),
            render(mv.getValues(), k, ((MapType) t).getValueType())));
      }
      l.sort(Comparator.comparing(e -> String.valueOf(e.get(0))));
      return l;
    }
    throw new IllegalStateException("no rendering for type " + t);
  }

  @SuppressWarnings("unchecked")
  static void json(StringBuilder b, Object o) {
    if (o == null) {
      b.append("null");
    } else if (o instanceof String) {
      b.append('"');
      for (char c : ((String) o).toCharArray()) {
        if (c == '"' || c == '\\') b.append('\\').append(c);
        else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
        else b.append(c);
      }
      b.append('"');
    } else if (o instanceof Map) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
        if (!first) b.append(", ");
        first = false;
        json(b, e.getKey());
        b.append(": ");
        json(b, e.getValue());
      }
      b.append('}');
    } else {
      b.append('[');
      boolean first = true;
      for (Object e : (List<Object>) o) {
        if (!first) b.append(", ");
        first = false;
        json(b, e);
      }
      b.append(']');
    }
  }
}
