package io.flightgw.paimon;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Table-level checks of flightgw's Paimon backend (catalogs/paimon), run by exec:java:
 *
 * <pre>
 *   read-table WAREHOUSE DB TABLE    print the table's rows, one per line, sorted, as
 *                                    "k=v,k=v" text (see {@link #render}), after a line
 *                                    "ROWS n"
 *   write-sample WAREHOUSE           write the sample tables the gateway reads back
 *                                    (db.j_append, db.j_fixed, db.j_pk, db.j_part)
 * </pre>
 */
final class Tables {
    private Tables() {}

    static Catalog catalog(String warehouse) {
        Options o = new Options();
        o.set("warehouse", warehouse);
        // Catalog options from -Dpaimon.catalog.KEY=VALUE: the JDBC catalog's metastore, uri,
        // catalog-key and lock.enabled (see Jdbc.java and make paimon-jdbc-check).
        for (String k : System.getProperties().stringPropertyNames()) {
            if (k.startsWith(Jdbc.OPTION_PREFIX)) {
                o.set(k.substring(Jdbc.OPTION_PREFIX.length()), System.getProperty(k));
            }
        }
        if (warehouse.startsWith("s3://")) {
            s3Options(o);
        }
        return CatalogFactory.createCatalog(CatalogContext.create(o));
    }

    /**
     * The options of Paimon's S3 file system (paimon-s3, Hadoop's S3A inside: every "s3.*" key
     * becomes "fs.s3a.*") for the S3 server that integration/s3server runs, which hands its
     * address and test credentials to its command in S3_ENDPOINT, AWS_ACCESS_KEY_ID,
     * AWS_SECRET_ACCESS_KEY and AWS_REGION: path-style requests on plain http.
     */
    static void s3Options(Options o) {
        String endpoint = System.getenv("S3_ENDPOINT");
        if (endpoint == null || endpoint.isEmpty()) {
            throw new IllegalStateException("an s3:// warehouse needs S3_ENDPOINT (run under integration/s3server)");
        }
        o.set("s3.endpoint", endpoint);
        o.set("s3.path.style.access", "true");
        o.set("s3.connection.ssl.enabled", String.valueOf(endpoint.startsWith("https:")));
        o.set("s3.access-key", System.getenv("AWS_ACCESS_KEY_ID"));
        o.set("s3.secret-key", System.getenv("AWS_SECRET_ACCESS_KEY"));
        String region = System.getenv("AWS_REGION");
        o.set("s3.endpoint.region", region == null ? "us-east-1" : region);
    }

    static void readTable(String warehouse, String db, String name) throws Exception {
        try (Catalog c = catalog(warehouse)) {
            Table t = c.getTable(Identifier.create(db, name));
            ReadBuilder rb = t.newReadBuilder();
            List<Split> splits = rb.newScan().plan().splits();
            RowType type = t.rowType();
            List<String> out = new ArrayList<>();
            try (RecordReader<InternalRow> r = rb.newRead().createReader(splits)) {
                r.forEachRemaining(row -> out.add(render(row, type)));
            }
            Collections.sort(out);
            System.out.println("ROWS " + out.size());
            for (String s : out) {
                System.out.println(s);
            }
        }
    }

    /** Renders a row as name=value pairs in schema order; null is "null". */
    static String render(InternalRow row, RowType type) {
        StringBuilder sb = new StringBuilder();
        List<DataField> fs = type.getFields();
        for (int i = 0; i < fs.size(); i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append(fs.get(i).name()).append('=');
            Object v = InternalRow.createFieldGetter(fs.get(i).type(), i).getFieldOrNull(row);
            sb.append(value(v, fs.get(i).type()));
        }
        return sb.toString();
    }

    static String value(Object v, DataType t) {
        if (v == null) {
            return "null";
        }
        if (v instanceof byte[]) {
            StringBuilder sb = new StringBuilder("0x");
            for (byte b : (byte[]) v) {
                sb.append(String.format("%02x", b));
            }
            return sb.toString();
        }
        if (v instanceof InternalArray && t instanceof ArrayType) {
            InternalArray a = (InternalArray) v;
            DataType et = ((ArrayType) t).getElementType();
            InternalArray.ElementGetter g = InternalArray.createElementGetter(et);
            StringBuilder sb = new StringBuilder("[");
            for (int i = 0; i < a.size(); i++) {
                sb.append(i > 0 ? ";" : "").append(value(g.getElementOrNull(a, i), et));
            }
            return sb.append(']').toString();
        }
        if (v instanceof InternalMap && t instanceof MapType) {
            return "map(" + ((InternalMap) v).size() + ")";
        }
        if (v instanceof InternalRow && t instanceof RowType) {
            return "{" + render((InternalRow) v, (RowType) t) + "}";
        }
        return v.toString();
    }

    /**
     * Reads every table of DB that has an expected/&lt;table&gt;.txt under the warehouse and
     * compares its rows with the file (a "ROWS n" line, then the rendered rows, sorted). For a
     * fixed-bucket table it also recomputes each row's bucket with Paimon's own
     * FixedBucketRowKeyExtractor and checks it against the bucket of the file that holds it.
     * The expected rows of an s3:// warehouse are in the local directory expected. A file
     * named &lt;table&gt;@&lt;n&gt;.txt holds the rows of snapshot n (read by time travel,
     * scan.snapshot-id).
     */
    static void verifyTables(String warehouse, String db, String expected) throws Exception {
        java.nio.file.Path exp = expected != null ? java.nio.file.Path.of(expected) : java.nio.file.Path.of(warehouse, "expected");
        List<java.nio.file.Path> files;
        try (java.util.stream.Stream<java.nio.file.Path> st = java.nio.file.Files.list(exp)) {
            files = st.sorted().collect(java.util.stream.Collectors.toList());
        }
        int failed = 0;
        try (Catalog c = catalog(warehouse)) {
            for (java.nio.file.Path f : files) {
                String name = f.getFileName().toString().replace(".txt", "");
                List<String> want = java.nio.file.Files.readAllLines(f);
                String[] at = name.split("@", 2);
                FileStoreTable t = fileStore(c, db, at[0]);
                if (at.length == 2) {
                    t = t.copy(Collections.singletonMap("scan.snapshot-id", at[1]));
                }
                List<String> got = new ArrayList<>();
                ReadBuilder rb = t.newReadBuilder();
                RowType type = t.rowType();
                int buckets = t.coreOptions().bucket();
                org.apache.paimon.table.sink.FixedBucketRowKeyExtractor ex =
                        buckets > 0 ? new org.apache.paimon.table.sink.FixedBucketRowKeyExtractor(t.schema()) : null;
                int[] misplaced = {0};
                for (Split sp : rb.newScan().plan().splits()) {
                    int bucket = ((org.apache.paimon.table.source.DataSplit) sp).bucket();
                    try (RecordReader<InternalRow> r = rb.newRead().createReader(sp)) {
                        r.forEachRemaining(row -> {
                            got.add(render(row, type));
                            if (ex != null) {
                                ex.setRecord(row);
                                if (ex.bucket() != bucket) {
                                    misplaced[0]++;
                                }
                            }
                        });
                    }
                }
                Collections.sort(got);
                got.add(0, "ROWS " + got.size());
                boolean ok = got.equals(want) && misplaced[0] == 0;
                System.out.println((ok ? "OK   " : "FAIL ") + name + ": " + (got.size() - 1) + " rows"
                        + (ex != null ? ", " + buckets + " buckets, " + misplaced[0] + " rows in the wrong bucket" : "")
                        + " (" + label() + ")");
                if (!ok) {
                    failed++;
                    for (int i = 0; i < Math.max(got.size(), want.size()); i++) {
                        String g = i < got.size() ? got.get(i) : "<none>";
                        String w = i < want.size() ? want.get(i) : "<none>";
                        if (!g.equals(w)) {
                            System.out.println("  first difference at line " + i + ": got " + g + ", want " + w);
                            break;
                        }
                    }
                }
            }
        }
        if (failed > 0) {
            throw new IllegalStateException(failed + " table(s) differ");
        }
    }

    static String label() {
        return Main.label();
    }

    /**
     * Compacts the manifests of every table of DB that has an expected/&lt;table&gt;.txt with
     * Paimon's BatchTableCommit.compactManifests (FileStoreCommitImpl.compactManifest: a full
     * ManifestFileMerger merge, which refuses a file added twice and cancels every DELETE with
     * its ADD), committing a COMPACT snapshot over the manifests the gateway wrote and merged.
     * It prints each table's manifest count before and after.
     */
    static void compactManifests(String warehouse, String db) throws Exception {
        java.nio.file.Path exp = java.nio.file.Path.of(warehouse, "expected");
        List<java.nio.file.Path> files;
        try (java.util.stream.Stream<java.nio.file.Path> st = java.nio.file.Files.list(exp)) {
            files = st.sorted().collect(java.util.stream.Collectors.toList());
        }
        try (Catalog c = catalog(warehouse)) {
            for (java.nio.file.Path f : files) {
                String name = f.getFileName().toString().replace(".txt", "");
                if (name.contains("@")) {
                    continue; // a snapshot's rows: the table is compacted under its own name
                }
                FileStoreTable t = fileStore(c, db, name);
                int before = dataManifests(t);
                try (BatchTableCommit cm = t.newBatchWriteBuilder().newCommit()) {
                    cm.compactManifests();
                }
                System.out.println("COMPACTED " + name + ": " + before + " manifests, now " + dataManifests(t)
                        + " (" + label() + ")");
            }
        }
    }

    /**
     * Fully compacts every bucket of the primary-key tables of DB with an expected/&lt;table&gt;.txt
     * whose name starts with PREFIX, with Paimon's own writer (BatchTableWrite.compact, full):
     * its merge tree restores the levels of the files the gateway compacted (the last level,
     * one sorted run a bucket) and rewrites them, committing a COMPACT snapshot over the
     * gateway's. The rows stay; verify-tables reads them again.
     */
    static void compactTables(String warehouse, String db, String prefix) throws Exception {
        java.nio.file.Path exp = java.nio.file.Path.of(warehouse, "expected");
        List<java.nio.file.Path> files;
        try (java.util.stream.Stream<java.nio.file.Path> st = java.nio.file.Files.list(exp)) {
            files = st.sorted().collect(java.util.stream.Collectors.toList());
        }
        try (Catalog c = catalog(warehouse)) {
            for (java.nio.file.Path f : files) {
                String name = f.getFileName().toString().replace(".txt", "");
                if (name.contains("@") || !name.startsWith(prefix)) {
                    continue;
                }
                FileStoreTable t = fileStore(c, db, name);
                if (t.primaryKeys().isEmpty()) {
                    continue;
                }
                // The samples' write-buffer-size (2 kb, to make the gateway spill) is below the
                // three pages Java's writer needs.
                t = t.copy(Collections.singletonMap("write-buffer-size", "64 mb"));
                java.util.Set<String> seen = new java.util.HashSet<>();
                int buckets = 0;
                BatchWriteBuilder wb = t.newBatchWriteBuilder();
                try (BatchTableWrite w = wb.newWrite(); BatchTableCommit cm = wb.newCommit()) {
                    for (Split sp : t.newReadBuilder().newScan().plan().splits()) {
                        org.apache.paimon.table.source.DataSplit ds = (org.apache.paimon.table.source.DataSplit) sp;
                        if (seen.add(ds.partition().toString() + "/" + ds.bucket())) {
                            w.compact(ds.partition(), ds.bucket(), true);
                            buckets++;
                        }
                    }
                    cm.commit(w.prepareCommit());
                }
                org.apache.paimon.Snapshot s = t.snapshotManager().latestSnapshot();
                System.out.println("JAVA-COMPACTED " + name + ": " + buckets + " buckets, snapshot " + s.id() + " "
                        + s.commitKind() + " (" + label() + ")");
            }
        }
    }

    static int dataManifests(FileStoreTable t) {
        org.apache.paimon.Snapshot s = t.snapshotManager().latestSnapshot();
        return s == null ? 0 : t.store().manifestListFactory().create().readDataManifests(s).size();
    }

    static void writeSample(String warehouse) throws Exception {
        try (Catalog c = catalog(warehouse)) {
            c.createDatabase("db", true);
            Schema.Builder base = Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull())
                    .column("name", DataTypes.STRING())
                    .column("p", DataTypes.STRING())
                    .option("file.format", "parquet");
            create(c, "j_append", base.option("bucket", "-1").build());
            create(c, "j_fixed", Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull())
                    .column("name", DataTypes.STRING())
                    .column("p", DataTypes.STRING())
                    .option("file.format", "parquet")
                    .option("bucket", "4").option("bucket-key", "id").build());
            create(c, "j_pk", Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull())
                    .column("name", DataTypes.STRING())
                    .column("p", DataTypes.STRING())
                    .primaryKey("id")
                    .option("file.format", "parquet")
                    .option("bucket", "2").build());
            create(c, "j_part", Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull())
                    .column("name", DataTypes.STRING())
                    .column("p", DataTypes.STRING())
                    .partitionKeys("p")
                    .option("file.format", "parquet")
                    .option("bucket", "-1").build());
            for (String name : new String[] {"j_append", "j_fixed", "j_pk", "j_part"}) {
                Table t = c.getTable(Identifier.create("db", name));
                for (int commit = 0; commit < 2; commit++) {
                    BatchWriteBuilder wb = t.newBatchWriteBuilder();
                    List<CommitMessage> msgs;
                    try (BatchTableWrite w = wb.newWrite()) {
                        for (long i = 0; i < 10; i++) {
                            long id = name.equals("j_pk") ? i : commit * 10 + i;
                            w.write(GenericRow.ofKind(RowKind.INSERT, id,
                                    BinaryString.fromString("n" + commit + "-" + i),
                                    BinaryString.fromString("p" + (i % 2))));
                        }
                        msgs = w.prepareCommit();
                    }
                    try (BatchTableCommit cm = wb.newCommit()) {
                        cm.commit(msgs);
                    }
                }
            }
        }
    }

    static void create(Catalog c, String name, Schema s) throws Exception {
        c.createTable(Identifier.create("db", name), s, true);
    }

    static FileStoreTable fileStore(Catalog c, String db, String name) throws Exception {
        return (FileStoreTable) c.getTable(Identifier.create(db, name));
    }
}
