package catalogs

import (
	"errors"
	"strings"
	"syscall"
)

// The bounds of a path a backend creates, besides MaxNameBytes for each
// of its directory names.
const (
	// MaxLocalPathBytes is the longest local path Linux opens (PATH_MAX,
	// 4096 bytes with its NUL).
	MaxLocalPathBytes = 4095
	// MaxObjectKeyBytes is the longest object key S3 stores (UTF-8 bytes).
	MaxObjectKeyBytes = 1024
)

// CheckFilePath checks a file a backend is about to create for table t
// whose directories come from values the client sent (a partition's
// "column=value", as the table format spells it): every directory name
// of rel (the path below the table, slash-separated) fits a file name
// (MaxNameBytes), and the whole path or object key, full bytes long, fits
// the store's max. The storage would refuse either (ENAMETOOLONG, S3's
// KeyTooLongError), and a write that fails that way fails again: it is
// the client's value, InvalidArgument naming the partition column and the
// limit, never Unavailable (which a client retries).
func CheckFilePath(t TableIdent, rel string, full, max int) error {
	var parts []string
	for seg := range strings.SplitSeq(rel, "/") {
		col, _, isPart := strings.Cut(seg, "=")
		if isPart {
			parts = append(parts, col)
		}
		if len(seg) <= MaxNameBytes {
			continue
		}
		if isPart {
			return Errorf(ErrInvalidArgument, "table %s: partition column %s: the value makes the directory name %s… %d bytes long (as stored, escaped), over the limit of %d bytes of a file name",
				t, col, clip(seg, 48), len(seg), MaxNameBytes)
		}
		return Errorf(ErrInvalidArgument, "table %s: the file name %s… is %d bytes long, over the limit of %d bytes", t, clip(seg, 48), len(seg), MaxNameBytes)
	}
	if full > max {
		return Errorf(ErrInvalidArgument, "table %s: the values of partition columns %s make a file path %d bytes long, over the storage's limit of %d bytes",
			t, strings.Join(parts, ", "), full, max)
	}
	return nil
}

// NameTooLong reports whether err is a storage's refusal of a name or
// path that is too long (ENAMETOOLONG): a backend maps it to
// InvalidArgument, like CheckFilePath, where a check before the write
// could not see it.
func NameTooLong(err error) bool { return errors.Is(err, syscall.ENAMETOOLONG) }

// clip is s cut to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}
