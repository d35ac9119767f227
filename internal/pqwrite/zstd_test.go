package pqwrite

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestZstdDecode: the registered codec decodes what either encoder wrote
// into the buffer the page reader gives it, falls back to the Go decoder
// when that buffer cannot hold the frame, and reports a truncated frame or
// bytes that are no frame as an error, not a panic.
func TestZstdDecode(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codec.(cZstd); !ok {
		t.Fatalf("registered zstd codec is %T, not cZstd", codec)
	}
	page := bytes.Repeat([]byte("a page of Parquet values 0123456789 "), 3000)
	frame := codec.Encode(nil, page)
	for _, tc := range []struct {
		name    string
		dst     []byte
		src     []byte
		wantErr bool
	}{
		{"exact", make([]byte, len(page)), frame, false},
		{"larger", make([]byte, len(page), 2*len(page)), frame, false},
		{"too small", make([]byte, 10), frame, false},
		{"nil", nil, frame, false},
		{"truncated", make([]byte, len(page)), frame[:len(frame)/2], true},
		{"not zstd", make([]byte, len(page)), page[:100], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := codec.(compress.ErrorCodec).DecodeWithError(tc.dst, tc.src)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error for a bad frame (%d bytes out)", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, page) {
				t.Fatalf("decoded %d bytes, not the page's %d", len(got), len(page))
			}
		})
	}
}
