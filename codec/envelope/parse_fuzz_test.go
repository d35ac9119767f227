package envelope

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/flightgw/flightgw/codec/paimon"
)

// FuzzParse: Parse (no key: `flightgw messages inspect`) reads any bytes
// or fails with one of the package's errors (a version 1 envelope is
// refused); an envelope it reads re-seals to the same bytes but for the
// signature.
func FuzzParse(f *testing.F) {
	bins, _ := filepath.Glob("testdata/*.bin")
	for _, p := range bins {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	v1, err := paimon.Wrap(paimon.Version11, []byte{0, 0, 0, 0})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v1)
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Parse(b)
		if err != nil {
			if !IsMalformed(err) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		out, err := Seal(e, []byte("any key"))
		if err != nil {
			t.Fatalf("a parsed envelope does not seal: %v", err)
		}
		if len(out) != len(b) || !bytes.Equal(out[:len(out)-macSize], b[:len(b)-macSize]) {
			t.Fatalf("re-sealed envelope differs before the signature")
		}
	})
}
