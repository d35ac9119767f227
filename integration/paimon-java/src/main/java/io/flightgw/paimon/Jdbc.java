package io.flightgw.paimon;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Checks of the gateway's Paimon JDBC catalog against Paimon's own JdbcCatalog, run by
 * make paimon-jdbc-check. The catalog comes from {@link Tables#catalog} with the options of
 * -Dpaimon.catalog.KEY=VALUE (metastore=jdbc, uri=jdbc:sqlite:... or jdbc:postgresql:...,
 * catalog-key, lock.enabled=true), so verify-tables and write-sample run through it too.
 *
 * <pre>
 *   jdbc-list WH DB T,T...   listDatabases holds DB and listTables(DB) every T: the gateway's
 *                            rows in paimon_database_properties and paimon_tables
 *   jdbc-commit-loop WH DB T N DIR
 *                            touch DIR/java-started, wait for DIR/go-ready (the gateway's
 *                            TestJDBCJavaRace), commit N one-row batches (ids 0..N-1) to DB.T
 *                            with BatchTableCommit, each under JdbcCatalogLock when
 *                            lock.enabled, while the gateway commits to the same table; then
 *                            touch DIR/java-done
 * </pre>
 */
final class Jdbc {
    static final String OPTION_PREFIX = "paimon.catalog.";

    private Jdbc() {}

    static void list(String warehouse, String db, String tables) throws Exception {
        try (Catalog c = Tables.catalog(warehouse)) {
            List<String> dbs = c.listDatabases();
            List<String> ts = c.listTables(db);
            System.out.println("databases " + dbs + ", tables of " + db + " " + ts + " (" + Main.label() + ")");
            if (!dbs.contains(db)) {
                throw new IllegalStateException("listDatabases " + dbs + " lacks " + db);
            }
            for (String t : tables.split(",")) {
                if (!ts.contains(t)) {
                    throw new IllegalStateException("listTables(" + db + ") " + ts + " lacks " + t);
                }
            }
            System.out.println("OK   jdbc-list: " + db + " and " + tables.split(",").length + " tables listed");
        }
    }

    static void commitLoop(String warehouse, String db, String name, int n, String dir) throws Exception {
        Path ready = Path.of(dir, "go-ready");
        try (Catalog c = Tables.catalog(warehouse)) {
            Table t = c.getTable(Identifier.create(db, name));
            // Start together with the gateway: it waits for java-started, this for go-ready.
            Files.write(Path.of(dir, "java-started"), new byte[0]);
            long deadline = System.currentTimeMillis() + 180_000;
            while (!Files.exists(ready)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the gateway never wrote " + ready);
                }
                Thread.sleep(20);
            }
            for (int i = 0; i < n; i++) {
                BatchWriteBuilder wb = t.newBatchWriteBuilder();
                List<CommitMessage> msgs;
                try (BatchTableWrite w = wb.newWrite()) {
                    w.write(GenericRow.of((long) i, BinaryString.fromString("java-" + i), BinaryString.fromString("p" + (i % 2))));
                    msgs = w.prepareCommit();
                }
                try (BatchTableCommit cm = wb.newCommit()) {
                    cm.commit(msgs);
                }
            }
            System.out.println("OK   jdbc-commit-loop: " + n + " commits to " + db + "." + name + " (" + Main.label() + ")");
        } finally {
            Files.write(Path.of(dir, "java-done"), new byte[0]);
        }
    }
}
