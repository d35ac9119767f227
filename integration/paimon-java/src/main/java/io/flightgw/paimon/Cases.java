package io.flightgw.paimon;

import org.apache.paimon.data.BinaryArray;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.index.DeletionVectorMeta;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.FileSource;
import org.apache.paimon.stats.SimpleStats;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The golden fixture cases: commit messages built with Paimon's own classes, covering what
 * issue 4 lists. Rows are built by InternalRowSerializer, as Paimon builds partitions and
 * stats, and remembered with their types so the JSON can show typed values.
 */
final class Cases {
    static final String[] KEY = {"INT"};
    static final String[] PART = {"INT", "STRING", "STRING", "DATE", "DECIMAL(10, 2)",
        "DECIMAL(20, 3)", "TIMESTAMP(3)", "TIMESTAMP(6)", "INT"};
    static final String[] VALUE = {"INT", "STRING", "BIGINT"};
    static final String[] NESTED = {"ROW<INT, STRING>", "ARRAY<STRING>", "MAP<STRING, BIGINT>",
        "ARRAY<DECIMAL(20, 2)>", "TIMESTAMP(9)", "BOOLEAN", "TINYINT", "SMALLINT", "FLOAT",
        "DOUBLE", "BYTES", "TIMESTAMP_LTZ(3)", "ARRAY<INT>"};

    final Map<BinaryRow, String[]> types = new IdentityHashMap<>();
    final Map<String, String> descriptions = new LinkedHashMap<>();
    final Map<String, List<CommitMessage>> cases = new LinkedHashMap<>();

    BinaryRow row(String[] ts, Object... values) {
        BinaryRow r = new InternalRowSerializer(Types.rowType(ts)).toBinaryRow(GenericRow.of(values)).copy();
        types.put(r, ts);
        return r;
    }

    static BinaryString s(String v) {
        return BinaryString.fromString(v);
    }

    static Decimal dec(String v, int p, int sc) {
        return Decimal.fromBigDecimal(new BigDecimal(v), p, sc);
    }

    SimpleStats stats(String[] ts, Object[] min, Object[] max, Long... nulls) {
        return new SimpleStats(row(ts, min), row(ts, max), BinaryArray.fromLongArray(nulls));
    }

    SimpleStats keyStats(int min, int max) {
        return stats(KEY, new Object[] {min}, new Object[] {max}, 0L);
    }

    SimpleStats valueStats(int min, int max) {
        return stats(VALUE, new Object[] {min, s("apple"), null}, new Object[] {max, s("zucchini-long"), null},
                0L, 2L, null);
    }

    DataFileMeta file(String name, int level, long minSeq, long maxSeq, FileSource source) {
        return DataFileMeta.create(name, 1024L + name.length(), 100L, row(KEY, 1), row(KEY, 100),
                keyStats(1, 100), valueStats(1, 100), minSeq, maxSeq, 0L, level,
                Collections.emptyList(), Timestamp.fromEpochMillis(1700000000123L), 3L, null,
                source, null, null, null, null);
    }

    static CommitMessage msg(BinaryRow part, int bucket, Integer total, DataIncrement d, CompactIncrement c) {
        return new CommitMessageImpl(part, bucket, total, d, c);
    }

    static DataIncrement data(List<DataFileMeta> n, List<DataFileMeta> d, List<DataFileMeta> cl,
            List<IndexFileMeta> ni, List<IndexFileMeta> di) {
        return new DataIncrement(n, d, cl, ni, di);
    }

    static CompactIncrement compact(List<DataFileMeta> b, List<DataFileMeta> a, List<DataFileMeta> cl,
            List<IndexFileMeta> ni, List<IndexFileMeta> di) {
        return new CompactIncrement(b, a, cl, ni, di);
    }

    static <T> List<T> none() {
        return new ArrayList<>();
    }

    static <T> List<T> list(T... v) {
        return new ArrayList<>(Arrays.asList(v));
    }

    static IndexFileMeta dvIndex(String name, String external, DeletionVectorMeta... dvs) {
        LinkedHashMap<String, DeletionVectorMeta> m = new LinkedHashMap<>();
        for (DeletionVectorMeta dv : dvs) {
            m.put(dv.dataFileName(), dv);
        }
        return new IndexFileMeta("DELETION_VECTORS", name, 4096L, dvs.length, m, external);
    }

    static IndexFileMeta hashIndex(String name, long rows) {
        return new IndexFileMeta("HASH", name, rows * 4, rows, (LinkedHashMap<String, DeletionVectorMeta>) null, null);
    }

    void add(String name, String description, List<CommitMessage> msgs) {
        cases.put(name, msgs);
        descriptions.put(name, description);
    }

    Cases build() {
        CompactIncrement noCompact = compact(none(), none(), none(), none(), none());
        add("unpartitioned", "unpartitioned table: new, deleted and changelog files, stats with nulls",
                list(msg(BinaryRow.EMPTY_ROW, 0, null,
                        data(list(file("data-a-0.parquet", 0, 1, 10, FileSource.APPEND),
                                        file("data-b-0.parquet", 0, 11, 20, FileSource.APPEND)),
                                list(file("data-old-0.parquet", 0, 0, 0, null)),
                                list(file("changelog-a-0.parquet", 0, 1, 20, FileSource.APPEND)),
                                none(), none()),
                        noCompact)));

        add("partitioned", "partitions of int, short and long strings, date, decimals below and above"
                        + " precision 18, timestamps below and above precision 3, null values",
                list(msg(row(PART, 42, s("short"), s("longer than eight"), 19723, dec("123.45", 10, 2),
                                        dec("12345678901234567.891", 20, 3), Timestamp.fromEpochMillis(1700000000123L),
                                        Timestamp.fromEpochMillis(1700000000123L, 456789), null),
                                3, 8, data(list(file("data-p1-0.orc", 0, 1, 5, FileSource.APPEND)), none(), none(), none(), none()),
                                noCompact),
                        msg(row(PART, 7, null, s("x"), null, null, null, null, null, 1),
                                1, 8, data(list(file("data-p2-0.orc", 0, 1, 5, FileSource.APPEND)), none(), none(), none(), none()),
                                noCompact),
                        msg(row(PART, -1, s(""), s("ünïcødé long value"), -1, dec("-0.05", 10, 2),
                                        dec("-98765432109876543.21", 20, 3), Timestamp.fromEpochMillis(-1L),
                                        Timestamp.fromEpochMillis(0L, 1), Integer.MIN_VALUE),
                                0, null, data(list(file("data-p3-0.orc", 0, 1, 5, FileSource.APPEND)), none(), none(), none(), none()),
                                noCompact)));

        add("index", "hash index and deletion-vector index files with ranges, external index path",
                list(msg(row(new String[] {"STRING"}, s("2024-01-01")), 0, 2,
                        data(list(file("data-i-0.parquet", 0, 1, 3, FileSource.APPEND)), none(), none(),
                                list(hashIndex("index-hash-0", 100),
                                        dvIndex("index-dv-0", "s3://bucket/ext/index-dv-0",
                                                Compat.dv("data-i-0.parquet", 1, 24, 5L),
                                                Compat.dv("data-old-1.parquet", 25, 40, null))),
                                list(hashIndex("index-hash-old", 50))),
                        noCompact)));

        DataFileMeta after = file("data-c-1.parquet", 1, 1, 20, FileSource.COMPACT);
        add("compaction", "compaction increment: before, after, changelog, new and deleted DV index files",
                list(msg(row(new String[] {"INT"}, 2024), 5, 16,
                        data(none(), none(), none(), none(), none()),
                        compact(list(file("data-a-0.parquet", 0, 1, 10, FileSource.APPEND),
                                        file("data-b-0.parquet", 0, 11, 20, FileSource.APPEND)),
                                list(after),
                                list(file("changelog-c-1.parquet", 1, 1, 20, FileSource.COMPACT)),
                                list(dvIndex("index-dv-1", null, Compat.dv("data-c-1.parquet", 1, 16, 2L))),
                                list(dvIndex("index-dv-0", null, Compat.dv("data-a-0.parquet", 1, 16, 1L)))))));

        add("buckets", "postpone bucket (-2) without total buckets, fixed bucket with and without total buckets",
                list(msg(row(new String[] {"INT"}, 1), -2, null,
                                data(list(file("data-postpone-0.parquet", 0, 1, 1, FileSource.APPEND)), none(), none(), none(), none()),
                                noCompact),
                        msg(row(new String[] {"INT"}, 1), 3, 4,
                                data(list(file("data-fixed-0.parquet", 0, 1, 1, FileSource.APPEND)), none(), none(), none(), none()),
                                noCompact),
                        msg(row(new String[] {"INT"}, 1), 2, null,
                                data(list(file("data-fixed-1.parquet", 0, 1, 1, FileSource.APPEND)), none(), none(), none(), none()),
                                noCompact)));

        DataFileMeta rich = DataFileMeta.create("data-rich-0.parquet", 2048L, 10L, row(KEY, 1), row(KEY, 9),
                keyStats(1, 9), valueStats(1, 9), 5L, 9L, 3L, 2, list("data-rich-0.parquet.index"),
                Timestamp.fromEpochMillis(1710000000999L), 0L, new byte[] {1, 2, 3}, FileSource.APPEND,
                list("id", "name", "amount"), "oss://bucket/external/data-rich-0.parquet", 1000L, list("id", "name"));
        DataFileMeta plain = DataFileMeta.create("data-plain-0.parquet", 10L, 1L, BinaryRow.EMPTY_ROW,
                BinaryRow.EMPTY_ROW, SimpleStats.EMPTY_STATS, SimpleStats.EMPTY_STATS, 0L, 0L, 0L, 0,
                none(), Timestamp.fromEpochMillis(1600000000000L), null, "embedded index longer than seven".getBytes(), null, none(), null, 0L, none());
        add("fields", "every optional DataFileMeta field: external path, first row id, write columns, value stats"
                        + " columns, embedded index, extra files, delete row count; and the empty variants",
                list(msg(BinaryRow.EMPTY_ROW, 0, 1,
                        data(list(rich, plain), none(), none(), none(), none()), noCompact)));

        add("empty", "no messages", none());
        add("empty_lists", "one message whose every list is empty",
                list(msg(BinaryRow.EMPTY_ROW, 0, null, data(none(), none(), none(), none(), none()), noCompact)));

        Map<Object, Object> m = new HashMap<>();
        m.put(s("k"), 1L);
        Map<Object, Object> m2 = new HashMap<>();
        m2.put(s("a-long-key-over-7"), null);
        SimpleStats nested = stats(NESTED,
                new Object[] {GenericRow.of(1, s("nested string")), new GenericArray(new Object[] {s("a"), null, s("long element")}),
                    new GenericMap(m), new GenericArray(new Object[] {dec("1.50", 20, 2), null}),
                    Timestamp.fromEpochMillis(1700000000000L, 999999), true, (byte) -1, (short) 300, 1.5f,
                    -2.25d, new byte[] {0, 1, 2, 3, 4, 5, 6, 7, 8}, Timestamp.fromEpochMillis(1L),
                    new GenericArray(new int[] {1, 2, 3})},
                new Object[] {GenericRow.of(null, s("x")), new GenericArray(new Object[0]), new GenericMap(m2),
                    null, null, false, null, null, null, null, new byte[] {9}, null, null},
                0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L, 12L);
        DataFileMeta nestedFile = DataFileMeta.create("data-nested-0.parquet", 1L, 1L, row(KEY, 1), row(KEY, 1),
                keyStats(1, 1), nested, 0L, 0L, 0L, 0, none(), Timestamp.fromEpochMillis(5L), null, null, null, null, null, null, null);
        add("nested", "stats rows with nested rows, arrays, maps, big decimals, nanosecond timestamps and every"
                        + " fixed-width type",
                list(msg(BinaryRow.EMPTY_ROW, 0, null, data(list(nestedFile), none(), none(), none(), none()), noCompact)));

        if (Compat.globalIndexClass() != null) {
            add("global_index", "a global index file (serializer version 11 and later)",
                    list(msg(BinaryRow.EMPTY_ROW, 0, null,
                            data(none(), none(), none(),
                                    list(Compat.globalIndexFile("btree", "global-index-0", 512L, 1000L, 0L, 999L, 3,
                                            new int[] {4, 5}, new byte[] {7, 7, 7, 7, 7, 7, 7, 7, 7},
                                            Compat.hasSourceMeta() ? new byte[] {1} : null),
                                            Compat.globalIndexFile("btree", "global-index-1", 512L, 10L, 1000L, 1009L, 3,
                                                    null, null, null)),
                                    none()),
                            noCompact)));
        }
        return this;
    }
}
