package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Log is what log replay needs from storage: the names of the files directly in
// _delta_log, and their contents. The table-format floor's object store satisfies it; so
// does a local directory (DirLog).
type Log interface {
	// List returns the names of the files directly in _delta_log, in any order. Names are
	// relative to _delta_log ("00000000000000000000.json", "_last_checkpoint").
	List(ctx context.Context) ([]string, error)
	// Read returns a file's contents, named relative to _delta_log; sidecars are read as
	// "_sidecars/<name>". A missing file is an error wrapping fs.ErrNotExist.
	Read(ctx context.Context, name string) ([]byte, error)
}

// DirLog is the _delta_log directory of a table on the local file system.
type DirLog string

// List implements Log.
func (d DirLog) List(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir(string(d))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, ctx.Err()
}

// Read implements Log.
func (d DirLog) Read(ctx context.Context, name string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	clean := filepath.Clean(filepath.FromSlash(name))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return os.ReadFile(filepath.Join(string(d), clean))
}

// File kinds in _delta_log.
type logFileKind int

const (
	kindCommit logFileKind = iota
	kindClassicCheckpoint
	kindMultipartCheckpoint
	kindUUIDCheckpoint
)

// logFile is a parsed _delta_log file name.
type logFile struct {
	name    string
	version int64
	kind    logFileKind
	part    int // multi-part: 1-based part
	parts   int // multi-part: number of parts
	json    bool
}

var (
	commitRe    = regexp.MustCompile(`^(\d{20})\.json$`)
	classicRe   = regexp.MustCompile(`^(\d{20})\.checkpoint\.parquet$`)
	multipartRe = regexp.MustCompile(`^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$`)
	uuidCpRe    = regexp.MustCompile(`^(\d{20})\.checkpoint\.([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.(json|parquet)$`)
)

// parseLogName recognises commit and checkpoint file names; anything else (checksums,
// compacted logs, _last_checkpoint, temporary files) is not part of replay.
func parseLogName(name string) (logFile, bool) {
	ver := func(s string) (int64, bool) {
		v, err := strconv.ParseInt(s, 10, 64)
		return v, err == nil
	}
	// Most names are commits: read without a regular expression, which
	// every replay would run on every name of the log.
	if len(name) == 25 && strings.HasSuffix(name, ".json") && allDigits(name[:20]) {
		v, ok := ver(name[:20])
		return logFile{name: name, version: v, kind: kindCommit, json: true}, ok
	}
	if m := commitRe.FindStringSubmatch(name); m != nil {
		v, ok := ver(m[1])
		return logFile{name: name, version: v, kind: kindCommit, json: true}, ok
	}
	if m := classicRe.FindStringSubmatch(name); m != nil {
		v, ok := ver(m[1])
		return logFile{name: name, version: v, kind: kindClassicCheckpoint}, ok
	}
	if m := multipartRe.FindStringSubmatch(name); m != nil {
		v, ok := ver(m[1])
		part, _ := strconv.Atoi(m[2])
		parts, _ := strconv.Atoi(m[3])
		if part < 1 || part > parts || parts < 1 {
			return logFile{}, false
		}
		return logFile{name: name, version: v, kind: kindMultipartCheckpoint, part: part, parts: parts}, ok
	}
	if m := uuidCpRe.FindStringSubmatch(name); m != nil {
		v, ok := ver(m[1])
		return logFile{name: name, version: v, kind: kindUUIDCheckpoint, json: m[3] == "json"}, ok
	}
	return logFile{}, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CommitName is the file name of the commit of a version: 20 zero-padded digits.
func CommitName(version int64) string { return fmt.Sprintf("%020d.json", version) }

// ClassicCheckpointName is the file name of a classic checkpoint of a version.
func ClassicCheckpointName(version int64) string {
	return fmt.Sprintf("%020d.checkpoint.parquet", version)
}

// UUIDCheckpointName is the file name of a UUID-named (V2) checkpoint of a version, in
// JSON or Parquet.
func UUIDCheckpointName(version int64, id string, isJSON bool) string {
	ext := "parquet"
	if isJSON {
		ext = "json"
	}
	return fmt.Sprintf("%020d.checkpoint.%s.%s", version, id, ext)
}

// SidecarDir is the directory of V2 checkpoints' sidecars, in _delta_log.
const SidecarDir = "_sidecars"

// LastCheckpointName is the name of the last-checkpoint hint in _delta_log.
const LastCheckpointName = "_last_checkpoint"

// LastCheckpoint is the content of _delta_log/_last_checkpoint.
type LastCheckpoint struct {
	Version       int64
	Size          int64
	Parts         *int64
	SizeInBytes   *int64
	NumOfAddFiles *int64
	// Checksum is the MD5 of the canonical JSON, when the writer recorded one; ParseLastCheckpoint
	// has verified it.
	Checksum string
}

// ParseLastCheckpoint decodes _last_checkpoint. A present checksum must match the
// protocol's canonical-JSON MD5.
func ParseLastCheckpoint(data []byte) (*LastCheckpoint, error) {
	o := newObj(LastCheckpointName, data)
	lc := &LastCheckpoint{
		Version:       o.i64("version", true),
		Size:          o.i64("size", true),
		Parts:         o.i64Ptr("parts"),
		SizeInBytes:   o.i64Ptr("sizeInBytes"),
		NumOfAddFiles: o.i64Ptr("numOfAddFiles"),
		Checksum:      o.str("checksum", false),
	}
	if o.err != nil {
		return nil, o.err
	}
	if lc.Version < 0 {
		return nil, fmt.Errorf("%w: %s version %d", ErrMalformed, LastCheckpointName, lc.Version)
	}
	if lc.Checksum != "" {
		sum, err := canonicalChecksum(data)
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(sum, lc.Checksum) {
			return nil, fmt.Errorf("%w: %s checksum %s, content hashes to %s", ErrMalformed, LastCheckpointName, lc.Checksum, sum)
		}
	}
	return lc, nil
}

// ErrVersionNotFound is wrapped when the asked-for version does not exist, or cannot be
// rebuilt because commits it needs are missing (cleaned up, or a gap).
var ErrVersionNotFound = errors.New("version not in the delta log")
