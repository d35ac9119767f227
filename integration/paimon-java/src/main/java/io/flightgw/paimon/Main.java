package io.flightgw.paimon;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.io.DataInputDeserializer;
import org.apache.paimon.io.DataOutputViewStreamWrapper;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageSerializer;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Entry point, run once per Paimon release by exec:java (see mk/paimon.mk):
 *
 * <pre>
 *   generate DIR          write the golden fixtures vN_CASE.bin and vN_CASE.json into DIR
 *   verify DIR...         deserialize every vN_*.bin whose N this Paimon reads, compare it
 *                         with the JSON beside it, and re-serialize it at its own version
 *                         to the identical bytes
 *   bench FILE VERSION    warm-loop serializeList and deserializeList of the payload
 *   read-table WH DB T    print a table's rows (see {@link Tables})
 *   verify-tables WH DB [EXP]  compare the tables with WH/expected/T.txt, or EXP/T.txt
 *                         (see {@link Tables})
 *   compact-manifests WH DB   fully compact the manifests of those tables with Paimon's own
 *                         merger (see {@link Tables})
 *   compact-tables WH DB PREFIX  fully compact, with Paimon's own writer, every bucket of
 *                         those primary-key tables whose name starts with PREFIX (see {@link Tables})
 *   write-sample WH       write sample tables for the gateway to read (see {@link Tables})
 *   write-features WH     write tables with deletion vectors, dynamic buckets, merge engines,
 *                         a sequence field, NUL bytes in a composite key, ORC (see {@link Features})
 *   write-messages WH DB T DIR   stage payloads with two Java writers (see {@link Dist})
 *   commit-messages WH DB T DIR  commit the gateway's payloads with BatchTableCommit (see {@link Dist})
 *   jdbc-list WH DB T,T...       the JDBC catalog lists DB and the tables (see {@link Jdbc})
 *   jdbc-commit-loop WH DB T N DIR  N locked commits racing the gateway's (see {@link Jdbc})
 * </pre>
 *
 * Modes separated by "+" run one after the other in the same JVM.
 */
public final class Main {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final int VERSION = CommitMessageSerializer.CURRENT_VERSION;

    public static void main(String[] args) throws Exception {
        // Several modes in one JVM, separated by "+": each Maven start costs seconds.
        int from = 0;
        for (int i = 0; i <= args.length; i++) {
            if (i == args.length || args[i].equals("+")) {
                run(Arrays.copyOfRange(args, from, i));
                from = i + 1;
            }
        }
    }

    static void run(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: generate DIR | verify DIR... | bench FILE VERSION");
        }
        switch (args[0]) {
            case "generate":
                generate(Path.of(args[1]));
                break;
            case "verify":
                verify(Arrays.copyOfRange(args, 1, args.length));
                break;
            case "bench":
                Bench.run(Path.of(args[1]), Integer.parseInt(args[2]));
                break;
            case "read-table":
                Tables.readTable(args[1], args[2], args[3]);
                break;
            case "verify-tables":
                Tables.verifyTables(args[1], args[2], args.length > 3 ? args[3] : null);
                break;
            case "compact-manifests":
                Tables.compactManifests(args[1], args[2]);
                break;
            case "compact-tables":
                Tables.compactTables(args[1], args[2], args[3]);
                break;
            case "write-sample":
                Tables.writeSample(args[1]);
                break;
            case "write-features":
                Features.write(args[1]);
                break;
            case "write-messages":
                Dist.writeMessages(args[1], args[2], args[3], args[4]);
                break;
            case "jdbc-list":
                Jdbc.list(args[1], args[2], args[3]);
                break;
            case "jdbc-commit-loop":
                Jdbc.commitLoop(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5]);
                break;
            case "commit-messages":
                Dist.commitMessages(args[1], args[2], args[3], args[4]);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static String label() {
        String v = CommitMessageSerializer.class.getPackage().getImplementationVersion();
        return "paimon " + (v == null ? "?" : v) + " (serializer v" + VERSION + ")";
    }

    static byte[] serialize(List<CommitMessage> msgs) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new CommitMessageSerializer().serializeList(msgs, new DataOutputViewStreamWrapper(out));
        return out.toByteArray();
    }

    static List<CommitMessage> deserialize(int version, byte[] b) throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(b);
        List<CommitMessage> msgs = new CommitMessageSerializer().deserializeList(version, in);
        if (in.available() != 0) {
            throw new IOException(in.available() + " trailing bytes");
        }
        return msgs;
    }

    private static void generate(Path dir) throws Exception {
        Files.createDirectories(dir);
        Cases cases = new Cases().build();
        for (Map.Entry<String, List<CommitMessage>> c : cases.cases.entrySet()) {
            String base = "v" + VERSION + "_" + c.getKey();
            byte[] bin = serialize(c.getValue());
            ObjectNode doc = JSON.createObjectNode();
            doc.put("description", cases.descriptions.get(c.getKey()) + " (written by " + label() + ")");
            doc.setAll(new JsonModel(cases.types::get).document(VERSION, c.getValue()));
            Files.write(dir.resolve(base + ".bin"), bin);
            Files.writeString(dir.resolve(base + ".json"), JSON.writeValueAsString(doc) + "\n");
        }
        System.out.println(label() + ": wrote " + cases.cases.size() + " fixtures to " + dir);
        verify(new String[] {dir.toString()});
    }

    private static void verify(String[] dirs) throws Exception {
        int passed = 0, failed = 0, skipped = 0;
        List<String> failures = new ArrayList<>();
        for (String d : dirs) {
            List<Path> bins;
            try (Stream<Path> s = Files.list(Path.of(d))) {
                bins = s.filter(p -> p.toString().endsWith(".bin") && p.getFileName().toString().startsWith("v"))
                        .sorted().collect(Collectors.toList());
            }
            for (Path bin : bins) {
                Path json = Path.of(bin.toString().replaceAll("\\.bin$", ".json"));
                if (!Files.exists(json)) {
                    continue;
                }
                JsonNode want = JSON.readTree(json.toFile());
                int version = want.get("version").asInt();
                if (version > VERSION) {
                    skipped++; // a newer format than this Paimon reads
                    continue;
                }
                String err = check(Files.readAllBytes(bin), version, want);
                if (err == null) {
                    passed++;
                } else {
                    failed++;
                    failures.add(bin + ": " + err);
                }
            }
        }
        failures.forEach(f -> System.out.println("FAIL " + f));
        System.out.println(label() + ": checked " + (passed + failed) + " payloads (" + skipped
                + " of newer versions skipped)");
        System.out.println("paimon-java: " + passed + " passed, " + failed + " failed");
        if (failed > 0 || passed == 0) {
            throw new IllegalStateException(failed + " payloads failed, " + passed + " passed");
        }
    }

    /** Deserializes bin, compares it with want field by field, and re-serializes it. */
    static String check(byte[] bin, int version, JsonNode want) {
        try {
            List<CommitMessage> msgs = deserialize(version, bin);
            Iterator<String[]> types = JsonModel.rowTypes(want).iterator();
            Function<BinaryRow, String[]> next = r -> types.hasNext() ? types.next() : null;
            JsonNode got = new JsonModel(next).document(version, msgs);
            String d = JsonModel.diff("", want, got);
            if (d != null) {
                return d;
            }
            if (version == VERSION && !Arrays.equals(bin, serialize(msgs))) {
                return "re-serialized at v" + VERSION + " to different bytes";
            }
            return null;
        } catch (Exception e) {
            return e.toString();
        }
    }
}
