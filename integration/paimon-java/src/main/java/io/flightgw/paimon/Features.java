package io.flightgw.paimon;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.SimpleHashBucketAssigner;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;

import java.util.ArrayList;
import java.util.List;

/**
 * Tables with the features Flink and Paimon Java writers give tables (make
 * paimon-features-check): {@code write-features WAREHOUSE} writes, into database db, a
 * primary-key table of each kind, each with two commits (ten keys, then five of them updated
 * and one deleted where the engine allows):
 *
 * <pre>
 *   f_dv        deletion-vectors.enabled (Java compacts into deletion vectors)
 *   f_dyn       bucket -1 with a primary key: dynamic buckets, a hash index
 *   f_partial   merge-engine partial-update (a, then b, of the five keys)
 *   f_first     merge-engine first-row (the second commit loses)
 *   f_postpone  bucket -2 (postponed buckets; a batch write goes to real buckets)
 *   f_agg       merge-engine aggregation: sum, max, first_non_null_value and the default
 *               last_non_null_value
 *   f_seq       sequence.field ts (the second commit's smaller ts loses)
 *   f_nul       composite string key (a, b) whose values hold NUL bytes: ("x\0", "y") and
 *               ("x", "\0y") are two keys
 *   f_orc       an append table in ORC
 * </pre>
 *
 * The gateway (TestJavaFeatureTables) reads each, or refuses naming the option, tries to
 * append to each, and writes the rows every table must then hold to EXPECTED/T.txt for
 * verify-tables.
 */
final class Features {
    private Features() {}

    static void write(String warehouse) throws Exception {
        try (Catalog c = Tables.catalog(warehouse)) {
            c.createDatabase("db", true);
            kv(c, "f_dv", Schema.newBuilder().option("deletion-vectors.enabled", "true").option("bucket", "2"));
            kv(c, "f_dyn", Schema.newBuilder().option("bucket", "-1"));
            kv(c, "f_first", Schema.newBuilder().option("merge-engine", "first-row").option("bucket", "2"));
            kv(c, "f_postpone", Schema.newBuilder().option("bucket", "-2"));
            create(c, "f_partial", Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull()).column("a", DataTypes.STRING()).column("b", DataTypes.STRING())
                    .primaryKey("id").option("bucket", "2").option("merge-engine", "partial-update").option("file.format", "parquet").build());
            commit(c, "f_partial", rows(0, 10, i -> GenericRow.of((long) i, s("a" + i), null)));
            commit(c, "f_partial", rows(0, 5, i -> GenericRow.of((long) i, null, s("b" + i))));
            create(c, "f_agg", Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull()).column("v", DataTypes.BIGINT())
                    .column("mx", DataTypes.INT()).column("fnn", DataTypes.STRING()).column("lnn", DataTypes.STRING())
                    .primaryKey("id").option("bucket", "2").option("merge-engine", "aggregation")
                    .option("fields.v.aggregate-function", "sum").option("fields.mx.aggregate-function", "max")
                    .option("fields.fnn.aggregate-function", "first_non_null_value").option("file.format", "parquet").build());
            commit(c, "f_agg", rows(0, 10, i -> GenericRow.of((long) i, 1L, i, null, s("a" + i))));
            commit(c, "f_agg", rows(0, 5, i -> GenericRow.of((long) i, 10L, i - 100, s("f" + i), null)));
            create(c, "f_seq", Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull()).column("name", DataTypes.STRING()).column("ts", DataTypes.BIGINT())
                    .primaryKey("id").option("bucket", "2").option("sequence.field", "ts").option("file.format", "parquet").build());
            commit(c, "f_seq", rows(0, 10, i -> GenericRow.of((long) i, s("n0-" + i), 10L)));
            commit(c, "f_seq", rows(0, 5, i -> GenericRow.of((long) i, s("n1-" + i), 5L)));
            create(c, "f_nul", Schema.newBuilder()
                    .column("a", DataTypes.STRING().notNull()).column("b", DataTypes.STRING().notNull()).column("v", DataTypes.STRING())
                    .primaryKey("a", "b").option("bucket", "1").option("file.format", "parquet").build());
            List<GenericRow> nul = new ArrayList<>();
            nul.add(GenericRow.of(s("x\0"), s("y"), s("first")));
            nul.add(GenericRow.of(s("x"), s("\0y"), s("second")));
            commit(c, "f_nul", nul);
            create(c, "f_orc", Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull()).column("name", DataTypes.STRING()).column("p", DataTypes.STRING())
                    .option("bucket", "-1").option("file.format", "orc").build());
            commit(c, "f_orc", rows(0, 10, i -> GenericRow.of((long) i, s("n0-" + i), s("p" + (i % 2)))));
            for (String name : new String[] {"f_types_pk", "f_types"}) {
                Schema.Builder b = Schema.newBuilder()
                        .column("id", DataTypes.BIGINT().notNull())
                        .column("ts9", DataTypes.TIMESTAMP(9)).column("ts7", DataTypes.TIMESTAMP(7))
                        .column("bin", DataTypes.BINARY(4)).column("ch", DataTypes.CHAR(3))
                        .option("file.format", "parquet");
                if (name.equals("f_types_pk")) {
                    b.primaryKey("id").option("bucket", "1");
                } else {
                    b.option("bucket", "-1");
                }
                create(c, name, b.build());
                List<GenericRow> rs = new ArrayList<>();
                for (int i = 0; i < TIMESTAMPS.length; i++) {
                    Timestamp ts = Timestamp.fromLocalDateTime(java.time.LocalDateTime.parse(TIMESTAMPS[i]));
                    rs.add(GenericRow.of((long) i, ts, ts, new byte[] {(byte) i, 1, 2, (byte) 0xff}, s(i % 2 == 0 ? "ab" : "abc")));
                }
                commit(c, name, rs);
            }
        }
    }

    /**
     * The instants of f_types and f_types_pk (TIMESTAMP(9) and TIMESTAMP(7) columns, which
     * Paimon writes to Parquet as INT96, with negative nanoseconds of day before 1970).
     */
    static final String[] TIMESTAMPS = {
        "1969-12-31T23:59:59.999999999", "1970-01-01T00:00:00.000000001", "1900-01-01T12:34:56.123456789",
        "2024-02-29T23:59:59.999999991", "1969-07-20T20:17:40.000000007",
    };

    /** A (id, name, p) primary-key table: ten keys, then five updated and key 5 deleted. */
    static void kv(Catalog c, String name, Schema.Builder b) throws Exception {
        create(c, name, b.column("id", DataTypes.BIGINT().notNull()).column("name", DataTypes.STRING())
                .column("p", DataTypes.STRING()).primaryKey("id").option("file.format", "parquet").build());
        commit(c, name, rows(0, 10, i -> GenericRow.of((long) i, s("n0-" + i), s("p" + (i % 2)))));
        List<GenericRow> second = rows(0, 5, i -> GenericRow.of((long) i, s("n1-" + i), s("p" + (i % 2))));
        if (!name.equals("f_first")) { // first-row refuses deletions
            second.add(GenericRow.ofKind(RowKind.DELETE, 5L, s("n0-5"), s("p1")));
        }
        commit(c, name, second);
    }

    interface RowOf {
        GenericRow row(int i);
    }

    static List<GenericRow> rows(int from, int n, RowOf f) {
        List<GenericRow> out = new ArrayList<>();
        for (int i = from; i < from + n; i++) {
            out.add(f.row(i));
        }
        return out;
    }

    static BinaryString s(String v) {
        return BinaryString.fromString(v);
    }

    static void create(Catalog c, String name, Schema s) throws Exception {
        c.createTable(Identifier.create("db", name), s, true);
    }

    static void commit(Catalog c, String name, List<GenericRow> rows) throws Exception {
        Table t = c.getTable(Identifier.create("db", name));
        BatchWriteBuilder wb = t.newBatchWriteBuilder();
        List<CommitMessage> msgs;
        // Deletion vectors and first-row compact by lookup, which spills to local disk.
        try (BatchTableWrite w = (BatchTableWrite) wb.newWrite()
                .withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")))) {
            FileStoreTable ft = (FileStoreTable) t;
            // Dynamic buckets: the writer is handed each row's bucket, as Flink's bucket
            // assigner does (one assigner: every key to bucket 0); the writer keeps the hash
            // index.
            boolean dynamic = ft.coreOptions().bucket() == -1 && !ft.primaryKeys().isEmpty();
            SimpleHashBucketAssigner assigner = dynamic ? new SimpleHashBucketAssigner(1, 0, 1_000_000L, -1) : null;
            RowPartitionKeyExtractor keys = dynamic ? new RowPartitionKeyExtractor(ft.schema()) : null;
            for (GenericRow r : rows) {
                if (dynamic) {
                    w.write(r, assigner.assign(keys.partition(r), keys.trimmedPrimaryKey(r).hashCode()));
                } else {
                    w.write(r);
                }
            }
            msgs = w.prepareCommit();
        }
        try (BatchTableCommit cm = wb.newCommit()) {
            cm.commit(msgs);
        }
    }
}
