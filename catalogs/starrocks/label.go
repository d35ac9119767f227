package starrocks

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// labelPrefix starts every label the gateway makes.
const labelPrefix = "flightgw_"

// maxLabelTable is how much of the table's name a label shows.
const maxLabelTable = 40

// label derives a Stream Load label from a commit id and the table. A
// StarRocks label is unique per database, at most 128 characters of
// [-_A-Za-z0-9:], and kept by the FE for days: a retried commit with the
// same commit id finds the first one's transaction by it.
//
// The label is flightgw_<table>_<hash>: the table's name (its characters
// outside the label alphabet replaced by '_', cut to 40) so that an
// operator can tell whose load it is, and the first 32 hex digits of
// SHA-256 of the commit id, the database and the table, so that one
// commit id makes one label per table (a Flight transaction writes several
// tables of one database) and any commit id, whatever its length or
// characters, makes a valid label.
func label(commitID, db, table string) string {
	h := sha256.Sum256([]byte(commitID + "\x00" + db + "\x00" + table))
	var b strings.Builder
	for _, r := range table {
		if b.Len() >= maxLabelTable {
			break
		}
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return labelPrefix + b.String() + "_" + hex.EncodeToString(h[:16])
}
