package paimon

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// hashRow is BinaryRow.hashCode: MurmurHashUtils.hashBytes over the row's
// bytes (32-bit words read little-endian, as the JVM reads them on every
// platform Paimon ships for), seed 42.
func hashRow(b []byte) int32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := uint32(42)
	aligned := len(b) - len(b)%4
	mix := func(k uint32) {
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	for i := 0; i < aligned; i += 4 {
		mix(binary.LittleEndian.Uint32(b[i:]))
	}
	for i := aligned; i < len(b); i++ {
		mix(uint32(int32(int8(b[i]))))
	}
	h ^= uint32(len(b))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int32(h)
}

// bucketOf is DefaultBucketFunction.bucket: Math.abs(hash % numBuckets)
// of the bucket key's BinaryRow.
func bucketOf(key pcodec.Row, n int) int32 {
	r := hashRow(key.Bytes()) % int32(n)
	if r < 0 {
		r = -r
	}
	return r
}

// defaultPartitionName is Paimon's partition.default-name: the directory
// value of a null or blank partition value.
const defaultPartitionName = "__DEFAULT_PARTITION__"

// partitionPath is the directory of a partition, as Paimon's
// PartitionPathUtils.generatePartitionPath spells it with the legacy
// partition names (the value's toString), escaped as Hive escapes path
// names: "p=a/q=1/". Paimon readers find data files from this path, so
// it must be exactly Java's.
func partitionPath(names []string, values []any) string {
	var sb strings.Builder
	for i, n := range names {
		sb.WriteString(escapePathName(n))
		sb.WriteByte('=')
		v := defaultPartitionName
		if values[i] != nil {
			s := partitionString(values[i])
			if strings.TrimSpace(s) != "" {
				v = s
			}
		}
		sb.WriteString(escapePathName(v))
		sb.WriteByte('/')
	}
	return sb.String()
}

func partitionString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int8:
		return strconv.Itoa(int(x))
	case int16:
		return strconv.Itoa(int(x))
	case int32:
		return strconv.Itoa(int(x))
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// escapePathName is PartitionPathUtils.escapePathName: control characters
// and "#%'*/:=?\{}[]^ and DEL become %XX.
func escapePathName(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if r < 0x80 && needsEscaping(byte(r)) {
			fmt.Fprintf(&sb, "%%%02X", r)
			continue
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

func needsEscaping(c byte) bool {
	if c < ' ' || c == 0x7f {
		return true
	}
	return strings.IndexByte("\"#%'*/:=?\\{}[]^", c) >= 0
}
