package delta

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// canonicalChecksum computes the _last_checkpoint checksum (PROTOCOL.md "JSON checksum"):
// every leaf as path=value, names and string values percent-encoded, pairs sorted by path
// bytes and joined by commas, the top-level "checksum" key left out; then MD5 in hex.
// Number literals are kept as written. Duplicate keys make the JSON invalid.
func canonicalChecksum(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var pairs [][2]string
	if err := canonWalk(dec, "", true, &pairs, 0); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrMalformed, LastCheckpointName, err)
	}
	if _, err := dec.Token(); err == nil {
		return "", fmt.Errorf("%w: %s: data after the JSON object", ErrMalformed, LastCheckpointName)
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p[0] + "=" + p[1]
	}
	sum := md5.Sum([]byte(strings.Join(parts, ",")))
	return hex.EncodeToString(sum[:]), nil
}

func canonWalk(dec *json.Decoder, path string, top bool, pairs *[][2]string, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("nested deeper than %d", maxSchemaDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	join := func(seg string) string {
		if path == "" {
			return seg
		}
		return path + "+" + seg
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if seen[k] {
					return fmt.Errorf("duplicate key %q", k)
				}
				seen[k] = true
				if top && k == "checksum" {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					continue
				}
				if err := canonWalk(dec, join(`"`+canonEscape(k)+`"`), false, pairs, depth+1); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := canonWalk(dec, join(strconv.Itoa(i)), false, pairs, depth+1); err != nil {
					return err
				}
			}
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case string:
		*pairs = append(*pairs, [2]string{path, `"` + canonEscape(t) + `"`})
	case json.Number:
		*pairs = append(*pairs, [2]string{path, t.String()})
	case bool:
		*pairs = append(*pairs, [2]string{path, strconv.FormatBool(t)})
	case nil:
		*pairs = append(*pairs, [2]string{path, "null"})
	}
	return nil
}

// canonEscape percent-encodes every octet but a-z A-Z 0-9 - . _ ~, in upper-case hex.
func canonEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
