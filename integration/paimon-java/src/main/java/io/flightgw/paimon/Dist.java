package io.flightgw.paimon;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageSerializer;
import org.apache.paimon.types.DataTypes;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The distributed commit across Paimon Java and the gateway (docs/commit-messages.md), run by
 * exec:java from mk/paimon.mk's paimon-dist-check:
 *
 * <pre>
 *   write-messages WAREHOUSE DB TABLE DIR    create DB.TABLE (partitioned by p, 2 buckets on id)
 *                                            and stage rows with two BatchTableWrite writers,
 *                                            without committing: each writer's prepareCommit
 *                                            list, serialized, is DIR/writer-N.bin, the
 *                                            serializer version DIR/VERSION
 *   commit-messages WAREHOUSE DB TABLE DIR   deserialize every DIR/*.bin at the version in
 *                                            DIR/VERSION and commit them all at once with
 *                                            BatchTableCommit
 * </pre>
 */
final class Dist {
    /** Rows each Java writer stages; writer w writes ids w*ROWS .. (w+1)*ROWS-1. */
    static final int ROWS = 50;

    private Dist() {}

    static void writeMessages(String warehouse, String db, String name, String dir) throws Exception {
        Path out = Path.of(dir);
        Files.createDirectories(out);
        try (Catalog c = Tables.catalog(warehouse)) {
            c.createDatabase(db, true);
            c.createTable(Identifier.create(db, name), Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull())
                    .column("name", DataTypes.STRING())
                    .column("p", DataTypes.STRING())
                    .partitionKeys("p")
                    .option("file.format", "parquet")
                    .option("bucket", "2").option("bucket-key", "id").build(), true);
            Table t = c.getTable(Identifier.create(db, name));
            for (int w = 0; w < 2; w++) {
                BatchWriteBuilder wb = t.newBatchWriteBuilder();
                List<CommitMessage> msgs;
                try (BatchTableWrite tw = wb.newWrite()) {
                    for (long i = 0; i < ROWS; i++) {
                        long id = (long) w * ROWS + i;
                        tw.write(GenericRow.of(id, BinaryString.fromString("j" + id), BinaryString.fromString("p" + (id % 3))));
                    }
                    msgs = tw.prepareCommit();
                }
                Files.write(out.resolve("writer-" + w + ".bin"), Main.serialize(msgs));
                System.out.println("writer " + w + ": " + msgs.size() + " commit messages staged (" + Main.label() + ")");
            }
        }
        Files.writeString(out.resolve("VERSION"), CommitMessageSerializer.CURRENT_VERSION + "\n");
    }

    static void commitMessages(String warehouse, String db, String name, String dir) throws Exception {
        Path in = Path.of(dir);
        int version = Integer.parseInt(Files.readString(in.resolve("VERSION")).trim());
        List<Path> bins;
        try (Stream<Path> s = Files.list(in)) {
            bins = s.filter(p -> p.toString().endsWith(".bin")).sorted().collect(Collectors.toList());
        }
        if (bins.isEmpty()) {
            throw new IllegalStateException("no payloads in " + dir);
        }
        List<CommitMessage> all = new ArrayList<>();
        for (Path b : bins) {
            all.addAll(Main.deserialize(version, Files.readAllBytes(b)));
        }
        try (Catalog c = Tables.catalog(warehouse)) {
            Table t = c.getTable(Identifier.create(db, name));
            BatchWriteBuilder wb = t.newBatchWriteBuilder();
            try (BatchTableCommit cm = wb.newCommit()) {
                cm.commit(all);
            }
        }
        System.out.println("committed " + all.size() + " commit messages of " + bins.size()
                + " gateway payloads (serializer v" + version + ") to " + db + "." + name + " (" + Main.label() + ")");
    }
}
