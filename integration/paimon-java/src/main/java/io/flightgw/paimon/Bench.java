package io.flightgw.paimon;

import org.apache.paimon.io.DataInputDeserializer;
import org.apache.paimon.io.DataOutputViewStreamWrapper;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageSerializer;

import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * A warm-loop benchmark (no JMH) of serializeList and deserializeList on the payload the
 * Go benchmark uses, so that both run on the same messages in the same make run. It warms
 * up for a few seconds, then times rounds and prints min, median, mean and deviation per
 * operation, and one BENCH line that mk/paimon.mk reads.
 */
final class Bench {
    private static final int WARMUP_SECONDS = 5;
    private static final int ROUNDS = 15;
    private static final long ROUND_NANOS = 400_000_000L;

    static void run(Path file, int version) throws Exception {
        byte[] payload = Files.readAllBytes(file);
        List<CommitMessage> msgs = Main.deserialize(version, payload);
        int files = msgs.stream().mapToInt(m -> ((org.apache.paimon.table.sink.CommitMessageImpl) m)
                .newFilesIncrement().newFiles().size()).sum();
        CommitMessageSerializer ser = new CommitMessageSerializer();
        ByteArrayOutputStream out = new ByteArrayOutputStream(payload.length);
        long sink = 0;
        long warmEnd = System.nanoTime() + WARMUP_SECONDS * 1_000_000_000L;
        while (System.nanoTime() < warmEnd) {
            out.reset();
            ser.serializeList(msgs, new DataOutputViewStreamWrapper(out));
            sink += ser.deserializeList(version, new DataInputDeserializer(out.toByteArray())).size();
        }
        if (version == CommitMessageSerializer.CURRENT_VERSION) {
            out.reset();
            ser.serializeList(msgs, new DataOutputViewStreamWrapper(out));
            if (!Arrays.equals(out.toByteArray(), payload)) {
                throw new IllegalStateException("Java re-encodes the Go benchmark payload to different bytes");
            }
        }
        double[] enc = new double[ROUNDS];
        double[] dec = new double[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            long n = 0;
            long start = System.nanoTime();
            while (System.nanoTime() - start < ROUND_NANOS) {
                out.reset();
                ser.serializeList(msgs, new DataOutputViewStreamWrapper(out));
                n++;
            }
            enc[r] = (System.nanoTime() - start) / (double) n;
            n = 0;
            start = System.nanoTime();
            while (System.nanoTime() - start < ROUND_NANOS) {
                sink += ser.deserializeList(version, new DataInputDeserializer(payload)).size();
                n++;
            }
            dec[r] = (System.nanoTime() - start) / (double) n;
        }
        System.out.printf("%s: %d messages, %d data files, %d bytes (sink %d)%n",
                Main.label(), msgs.size(), files, payload.length, sink);
        report("serializeList", enc, payload.length);
        report("deserializeList", dec, payload.length);
        System.out.printf("BENCH java encode_min_ns=%.0f encode_ns=%.0f decode_min_ns=%.0f decode_ns=%.0f%n",
                min(enc), median(enc), min(dec), median(dec));
    }

    private static double min(double[] v) {
        return Arrays.stream(v).min().orElse(0);
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    private static void report(String op, double[] v, int bytes) {
        double mean = Arrays.stream(v).average().orElse(0);
        double sd = Math.sqrt(Arrays.stream(v).map(x -> (x - mean) * (x - mean)).sum() / v.length);
        double min = Arrays.stream(v).min().orElse(0);
        System.out.printf("  %-16s min %10.0f ns/op  median %10.0f  mean %10.0f ± %.1f%%  %7.1f MB/s (median)%n",
                op, min, median(v), mean, 100 * sd / mean, bytes / median(v) * 1e3);
    }
}
