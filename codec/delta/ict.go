package delta

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Table properties of in-commit timestamps (PROTOCOL.md "In-Commit Timestamps") and the
// checkpoint interval.
const (
	PropInCommitTimestamps                   = "delta.enableInCommitTimestamps"
	PropInCommitTimestampEnablementVersion   = "delta.inCommitTimestampEnablementVersion"
	PropInCommitTimestampEnablementTimestamp = "delta.inCommitTimestampEnablementTimestamp"
	PropCheckpointInterval                   = "delta.checkpointInterval"
)

// InCommitTimestamps reports whether the table writes in-commit timestamps: the property
// delta.enableInCommitTimestamps is true (the protocol must support the feature too, which
// CheckWrite leaves to the caller).
func (m *Metadata) InCommitTimestamps() bool {
	return strings.EqualFold(m.Configuration[PropInCommitTimestamps], "true")
}

// SetInCommitTimestamp records ts as the commit's inCommitTimestamp and as its timestamp,
// as Delta Spark does when the feature is on.
func (c *CommitInfo) SetInCommitTimestamp(ts int64) {
	if c.Fields == nil {
		c.Fields = map[string]json.RawMessage{}
	}
	v := json.RawMessage(strconv.FormatInt(ts, 10))
	c.Fields["inCommitTimestamp"], c.Fields["timestamp"] = v, v
}

// NextInCommitTimestamp is the in-commit timestamp of the commit after one whose commitInfo
// is prev, attempted at now (milliseconds): the protocol wants them strictly increasing, so
// it is now, or one millisecond past prev's when the clock is behind it.
func NextInCommitTimestamp(prev *CommitInfo, now int64) int64 {
	if p, ok := prev.InCommitTimestamp(); ok && p >= now {
		return p + 1
	}
	return now
}
