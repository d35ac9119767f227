package delta

import (
	"context"
	"fmt"
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
// nothing expires. Sidecars are ExpiredSidecars' (steps 4 and 5).
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

// SidecarMinAge is how long an unreferenced sidecar is kept (PROTOCOL.md "Metadata
// Cleanup", step 5: a day, as of midnight UTC), so that a checkpoint being written, its
// sidecars landed and its top-level file not yet, keeps them.
const SidecarMinAge = 24 * time.Hour

// ReferencedSidecars reads the checkpoints among names (files of _delta_log: classic and
// UUID-named ones; multi-part checkpoints are V1 and have none) and returns the sidecar
// names (in _delta_log/_sidecars) they reference: metadata cleanup's step 4, over the
// checkpoints it keeps. A checkpoint that cannot be read is an error: its sidecars are
// unknown, so none may be deleted.
func ReferencedSidecars(ctx context.Context, log Log, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range names {
		f, ok := parseLogName(n)
		if !ok || (f.kind != kindClassicCheckpoint && f.kind != kindUUIDCheckpoint) {
			continue
		}
		acts, err := readCheckpointFile(ctx, log, f.name, f.json)
		if err != nil {
			return nil, err
		}
		for _, a := range acts {
			if a.Sidecar == nil {
				continue
			}
			name, err := sidecarName(a.Sidecar.Path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			out[name] = true
		}
	}
	return out, nil
}

// ExpiredSidecars is metadata cleanup's step 5 over a listing of _delta_log/_sidecars:
// the sidecars no kept checkpoint references (referenced, from ReferencedSidecars) and
// not modified after midnight UTC of the day SidecarMinAge before now.
func ExpiredSidecars(sidecars []LogEntry, referenced map[string]bool, now time.Time) []string {
	cutoff := LogCleanupCutoff(now, SidecarMinAge)
	var out []string
	for _, e := range sidecars {
		if !referenced[e.Name] && !e.Mod.After(cutoff) {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}
