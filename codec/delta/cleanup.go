package delta

import (
	"regexp"
	"sort"
	"strconv"
	"time"
)

// LogEntry is a file directly in _delta_log with its modification time.
type LogEntry struct {
	Name string
	Mod  time.Time
}

var (
	crcRe       = regexp.MustCompile(`^(\d{20})\.crc$`)
	compactedRe = regexp.MustCompile(`^(\d{20})\.(\d{20})\.compacted\.json$`)
)

// LogCleanupCutoff is the cutOffTimestamp of metadata cleanup: midnight UTC of the day
// retention before now.
func LogCleanupCutoff(now time.Time, retention time.Duration) time.Time {
	return now.Add(-retention).UTC().Truncate(24 * time.Hour)
}

// ExpiredLogFiles applies the protocol's metadata cleanup (PROTOCOL.md "Metadata
// Cleanup") to a listing of _delta_log: the cutoff commit is the newest commit not newer
// than cutoff (commit times made monotonic, as Delta Spark does, so that a clock step back
// cannot expire a newer commit before an older one); the cutoff checkpoint the newest
// complete checkpoint not after it. Expired are the commits, checkpoints and checksums
// before the cutoff checkpoint's version and the log compactions starting at or before
// it; the checkpoint and the commit at its version are kept. Without a cutoff checkpoint
// nothing expires. Sidecars are not considered (they stay).
func ExpiredLogFiles(entries []LogEntry, cutoff time.Time) []string {
	type commit struct {
		v   int64
		mod time.Time
	}
	var commits []commit
	checkpoints := map[int64][]logFile{}
	for _, e := range entries {
		f, ok := parseLogName(e.Name)
		if !ok {
			continue
		}
		if f.kind == kindCommit {
			commits = append(commits, commit{f.version, e.Mod})
		} else {
			checkpoints[f.version] = append(checkpoints[f.version], f)
		}
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i].v < commits[j].v })
	cutoffCommit := int64(-1)
	var last time.Time
	for i, c := range commits {
		ts := c.mod
		if i > 0 && !ts.After(last) {
			ts = last.Add(time.Millisecond)
		}
		last = ts
		if ts.After(cutoff) {
			break
		}
		cutoffCommit = c.v
	}
	cp := int64(-1)
	for v, fs := range checkpoints {
		if _, ok := completeCheckpoint(fs); ok && v <= cutoffCommit && v > cp {
			cp = v
		}
	}
	if cp < 0 {
		return nil
	}
	var out []string
	for _, e := range entries {
		if f, ok := parseLogName(e.Name); ok {
			if f.version < cp {
				out = append(out, e.Name)
			}
			continue
		}
		if m := crcRe.FindStringSubmatch(e.Name); m != nil {
			if v, err := strconv.ParseInt(m[1], 10, 64); err == nil && v < cp {
				out = append(out, e.Name)
			}
			continue
		}
		if m := compactedRe.FindStringSubmatch(e.Name); m != nil {
			if v, err := strconv.ParseInt(m[1], 10, 64); err == nil && v <= cp {
				out = append(out, e.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}
