package dev.flightgw.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A flightgw process (FLIGHTGW_BIN) on a free loopback port with a data directory and configuration of its own,
 * seeded with the suite's tables by FLIGHTGW_SEED (see seed/main.go).
 */
final class TestGateway implements AutoCloseable {
  final Path dir;
  final int port;
  private final Process process;

  private TestGateway(Path dir, int port, Process process) {
    this.dir = dir;
    this.port = port;
    this.process = process;
  }

  /** The executable an environment variable names; make test-jdbc sets them. */
  static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty() || !new File(v).canExecute()) {
      throw new IllegalStateException(name + " must name an executable (make test-jdbc sets it)");
    }
    return v;
  }

  /**
   * Starts a gateway in dir with config (YAML; may be empty), waits until it listens, then runs the seed with
   * seedArgs after the gateway's URI (a user and password when auth is on).
   */
  static TestGateway start(Path dir, String config, String... seedArgs) throws Exception {
    return start(dir, config, null, seedArgs);
  }

  /**
   * As {@link #start(Path, String, String...)}, for a gateway serving TLS with the certificates the seed wrote in
   * tlsDir ({@link #writeCertificates}); null for plaintext.
   */
  static TestGateway start(Path dir, String config, Path tlsDir, String... seedArgs) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Path configFile = dir.resolve("flightgw.yaml");
    Files.writeString(configFile, config);
    Path log = dir.resolve("gateway.log");
    Process process = new ProcessBuilder(env("FLIGHTGW_BIN"), "serve", "--config", configFile.toString(),
            "--data-dir", dir.toString(), "--listen", "127.0.0.1:" + port)
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
    TestGateway g = new TestGateway(dir, port, process);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try (Socket ignored = new Socket("127.0.0.1", port)) {
        break;
      } catch (java.io.IOException e) {
        if (!process.isAlive() || System.nanoTime() > deadline) {
          g.close();
          fail("gateway did not start:\n" + Files.readString(log));
        }
        Thread.sleep(50);
      }
    }
    List<String> seed = new ArrayList<>(List.of(env("FLIGHTGW_SEED"),
        (tlsDir == null ? "grpc://" : "grpc+tls://") + "127.0.0.1:" + port));
    seed.addAll(List.of(seedArgs));
    ProcessBuilder pb = new ProcessBuilder(seed).inheritIO();
    if (tlsDir != null) {
      pb.environment().put("FLIGHTGW_SEED_TLS_DIR", tlsDir.toString());
    }
    Process p = pb.start();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "seed did not finish");
    assertEquals(0, p.exitValue(), "seed failed");
    return g;
  }

  /**
   * Writes a throwaway CA (ca.pem) and a server and a client certificate it signed (server.pem, server-key.pem,
   * client.pem, client-key.pem) into dir, with the seed.
   */
  static void writeCertificates(Path dir) throws Exception {
    Process p = new ProcessBuilder(env("FLIGHTGW_SEED"), "tls", dir.toString()).inheritIO().start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "seed tls did not finish");
    assertEquals(0, p.exitValue(), "seed tls failed");
  }

  /** The JDBC URL of the gateway, without encryption. */
  String url() {
    return "jdbc:arrow-flight-sql://127.0.0.1:" + port + "?useEncryption=false";
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    process.waitFor(30, TimeUnit.SECONDS);
  }
}
