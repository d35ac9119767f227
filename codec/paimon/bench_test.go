package paimon

import "testing"

// benchVersion is the newest version a served Paimon release (1.4.2) reads, so that the
// Go benchmarks and the Java warm loop (make paimon-bench) time the very same bytes.
const benchVersion = Version11

// BenchmarkEncodeList and BenchmarkDecodeList time the 10,000-data-file payload that the
// Java warm loop times too.
func BenchmarkEncodeList(b *testing.B) {
	msgs := benchMessages(10_000)
	buf, err := EncodeList(benchVersion, msgs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = AppendList(buf[:0], benchVersion, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeList(b *testing.B) {
	buf, err := EncodeList(benchVersion, benchMessages(10_000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeList(benchVersion, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchPayloadRoundTrip keeps the benchmark honest: what it decodes re-encodes to
// the same bytes, so the arena's shared chunks and reused column lists hold the right
// values.
func TestBenchPayloadRoundTrip(t *testing.T) {
	for _, v := range SupportedVersions {
		buf, err := EncodeList(v, benchMessages(2_000))
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := DecodeList(v, buf)
		if err != nil {
			t.Fatal(err)
		}
		again, err := EncodeList(v, msgs)
		if err != nil || string(again) != string(buf) {
			t.Fatalf("version %d: round trip differs (err %v)", v, err)
		}
		msgs[0].Data.NewFiles[0].ValueStatsCols[0] = "changed by the caller"
		if got := msgs[0].Data.NewFiles[1].ValueStatsCols[0]; got != "id" {
			t.Fatalf("a caller's change leaked into another file: %q", got)
		}
	}
}
