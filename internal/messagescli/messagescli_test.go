package messagescli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/codec/paimon"
)

const fixture = "../../codec/paimon/testdata/v11_partitioned"

// TestMessagesRoundTrip inspects a Java fixture, encodes the JSON back (raw and
// enveloped) and expects Java's bytes and the same JSON again.
func TestMessagesRoundTrip(t *testing.T) {
	want, err := os.ReadFile(fixture + ".bin")
	if err != nil {
		t.Fatal(err)
	}
	var js, stderr bytes.Buffer
	if code := Run("flightgw messages", []string{"inspect", "--version", "11", fixture + ".bin"}, nil, &js, &stderr); code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr.String())
	}
	var raw bytes.Buffer
	if code := Run("flightgw messages", []string{"encode"}, bytes.NewReader(js.Bytes()), &raw, &stderr); code != 0 {
		t.Fatalf("encode: exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(raw.Bytes(), want) {
		t.Fatal("encode(inspect(fixture)) differs from the fixture")
	}
	var env bytes.Buffer
	if code := Run("flightgw messages", []string{"encode", "--envelope"}, bytes.NewReader(js.Bytes()), &env, &stderr); code != 0 {
		t.Fatalf("encode --envelope: exit %d: %s", code, stderr.String())
	}
	if v, p, err := paimon.Unwrap(env.Bytes()); err != nil || v != paimon.Version11 || !bytes.Equal(p, want) {
		t.Fatalf("envelope: version %d, err %v", v, err)
	}
	path := filepath.Join(t.TempDir(), "env.bin")
	if err := os.WriteFile(path, env.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var js2 bytes.Buffer
	if code := Run("flightgw messages", []string{"inspect", "--partition-types", "INT, STRING, STRING, DATE, DECIMAL(10, 2), DECIMAL(20, 3), TIMESTAMP(3), TIMESTAMP(6), INT", path}, nil, &js2, &stderr); code != 0 {
		t.Fatalf("inspect envelope: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(js2.String(), `"12345678901234567.891"`) {
		t.Fatalf("typed partition values missing:\n%s", js2.String())
	}
}

func TestMessagesErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.bin")
	if err := os.WriteFile(garbage, []byte{0, 0, 0, 9}, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stderr string
	}{
		{"no subcommand", nil, "", 2, "usage"},
		{"unknown subcommand", []string{"frob"}, "", 2, "unknown subcommand"},
		{"help", []string{"inspect", "-h"}, "", 0, "usage"},
		{"missing file", []string{"inspect"}, "", 2, "usage"},
		{"unsupported version", []string{"inspect", "--version", "13", fixture + ".bin"}, "", 1, "supported: [10 11 12]"},
		{"malformed payload", []string{"inspect", garbage}, "", 1, "message list"},
		{"bad JSON", []string{"encode"}, "{", 1, "json"},
		{"global index at v10", []string{"encode", "--version", "10"}, `{"version": 11, "messages": [{"partition": {"arity": 0, "hex": "0000000000000000"}, "bucket": 0, "totalBuckets": null, "dataIncrement": {"newIndexFiles": [{"indexType": "btree", "fileName": "g", "globalIndex": {"rowRangeStart": 0, "rowRangeEnd": 1, "indexFieldId": 1}}]}, "compactIncrement": {}}]}`, 1, "globalIndex needs serializer version 11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run("flightgw messages", tt.args, strings.NewReader(tt.stdin), &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), tt.code, tt.stderr)
			}
		})
	}
}

// TestInspectSignedEnvelope prints a version 2 envelope's header and its
// payload decoded by kind, and refuses one whose CRC does not match.
func TestInspectSignedEnvelope(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"v2_iceberg.bin", `"kind": "iceberg"`},
		{"v2_paimon_java.bin", `"dataIncrement"`},
	} {
		var out, stderr bytes.Buffer
		path := filepath.Join("..", "..", "codec", "envelope", "testdata", c.file)
		if code := Run("flightgw messages", []string{"inspect", path}, nil, &out, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.file, code, stderr.String())
		}
		if !strings.Contains(out.String(), c.want) || !strings.Contains(out.String(), `"signature": "not checked"`) {
			t.Errorf("%s printed:\n%s\nwant %s", c.file, out.String(), c.want)
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "codec", "envelope", "testdata", "v2_iceberg.bin"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	path := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	if code := Run("flightgw messages", []string{"inspect", path}, nil, &out, &stderr); code != 1 {
		t.Fatalf("corrupted envelope: exit %d, want 1", code)
	}
}
