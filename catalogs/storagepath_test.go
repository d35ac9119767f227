package catalogs

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// TestCheckFilePath: a file path made from client values is refused,
// InvalidArgument naming the partition column (or the file) and the
// limit, before the storage refuses it as ENAMETOOLONG or
// KeyTooLongError; one within every bound passes.
func TestCheckFilePath(t *testing.T) {
	tb := TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	file := "bucket-0/data-0.parquet"
	cases := []struct {
		name      string
		rel       string
		full, max int
		want      []string // nil: accepted
	}{
		{"plain", "p=a/" + file, 100, MaxObjectKeyBytes, nil},
		{"255 bytes", "p=" + strings.Repeat("x", 253) + "/" + file, 400, MaxLocalPathBytes, nil},
		{"256 bytes", "p=" + strings.Repeat("x", 254) + "/" + file, 400, MaxLocalPathBytes, []string{"partition column p", "256 bytes", "limit of 255 bytes"}},
		{"second column", "a=1/b=" + strings.Repeat("ü", 200) + "/" + file, 500, MaxLocalPathBytes, []string{"partition column b", "402 bytes"}},
		{"escaped", "p=" + strings.Repeat("%25", 90) + "/" + file, 400, MaxLocalPathBytes, []string{"partition column p", "272 bytes"}},
		{"file name", "p=a/" + strings.Repeat("f", 300), 400, MaxLocalPathBytes, []string{"file name", "300 bytes"}},
		{"key over S3's limit", "a=" + strings.Repeat("x", 250) + "/b=" + strings.Repeat("y", 250) + "/c=" + strings.Repeat("z", 250) + "/d=" + strings.Repeat("w", 250) + "/" + file,
			1100, MaxObjectKeyBytes, []string{"partition columns a, b, c, d", "1100 bytes", "limit of 1024 bytes"}},
		{"path over PATH_MAX", "a=1/" + file, 5000, MaxLocalPathBytes, []string{"partition columns a", "limit of 4095 bytes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckFilePath(tb, c.rel, c.full, c.max)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("%v, want InvalidArgument", err)
			}
			for _, w := range append(c.want, "table lake.default.t") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
		})
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&fs.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENAMETOOLONG}, true},
		{fmt.Errorf("create: %w", &fs.PathError{Op: "open", Path: "/x", Err: syscall.ENAMETOOLONG}), true},
		{&fs.PathError{Op: "mkdir", Path: "/x", Err: syscall.ENOSPC}, false},
		{errors.New("file name too long"), false},
	} {
		if got := NameTooLong(c.err); got != c.want {
			t.Errorf("NameTooLong(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
