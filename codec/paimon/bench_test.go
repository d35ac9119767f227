package paimon

import "testing"

// BenchmarkEncodeList and BenchmarkDecodeList time the 10,000-data-file payload that the
// Java warm loop (make paimon-bench) times too.
func BenchmarkEncodeList(b *testing.B) {
	msgs := benchMessages(10_000)
	buf, err := EncodeList(DefaultVersion, msgs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = AppendList(buf[:0], DefaultVersion, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeList(b *testing.B) {
	buf, err := EncodeList(DefaultVersion, benchMessages(10_000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeList(DefaultVersion, buf); err != nil {
			b.Fatal(err)
		}
	}
}
