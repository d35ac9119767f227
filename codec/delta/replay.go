package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Snapshot is the state of a table at one version (PROTOCOL.md "Action Reconciliation").
type Snapshot struct {
	Version  int64
	Protocol Protocol
	Metadata Metadata
	Schema   *StructType
	// Files are the live logical files, sorted by path: one add per path, the newest
	// (path, deletion vector) pair seen for it.
	Files []*AddFile
	// Tombstones are the remove actions still in the state, keyed by (path, dv unique id)
	// and not also added; only VACUUM needs them. Expiry is Tombstones' caller's choice
	// (LiveTombstones).
	Tombstones []*RemoveFile
	// Txns is the latest version of each application id.
	Txns map[string]Txn
	// Domains are the metadata domains, tombstones excluded.
	Domains map[string]DomainMetadata
	// CommitInfo is the commitInfo of the commit at Version, when it has one and its file
	// is still in the log.
	CommitInfo *CommitInfo
	// Checkpoint is the name of the checkpoint replay started from, or "" when it replayed
	// every commit from version 0.
	Checkpoint string
	// LastCheckpoint is _last_checkpoint, when present and readable, as it was when the
	// snapshot was replayed (a snapshot a StateCache kept is returned as it was).
	LastCheckpoint *LastCheckpoint
}

// Load replays the log to the snapshot at version, or the latest version when version is
// negative. It starts from the newest complete checkpoint not after the version (multi-part
// checkpoints with a missing part are ignored, as the protocol requires) and applies the
// commits after it, which must be contiguous. With a Log that is a StateCache it starts
// from the state kept instead when that is no older than the checkpoint. The snapshot may be
// shared with other callers: it must not be modified.
func Load(ctx context.Context, log Log, version int64) (*Snapshot, error) {
	names, err := log.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("delta log: list: %w", err)
	}
	commits := map[int64]logFile{}
	checkpoints := map[int64][]logFile{}
	var latest int64 = -1
	hasLast := false
	for _, n := range names {
		if n == LastCheckpointName {
			hasLast = true
			continue
		}
		f, ok := parseLogName(n)
		if !ok {
			continue
		}
		if f.kind == kindCommit {
			commits[f.version] = f
		} else {
			checkpoints[f.version] = append(checkpoints[f.version], f)
		}
		if f.kind == kindCommit && f.version > latest {
			latest = f.version
		}
	}
	if latest < 0 && len(checkpoints) == 0 {
		return nil, fmt.Errorf("delta log: %w: no commits", ErrVersionNotFound)
	}
	for v, fs := range checkpoints {
		if _, ok := completeCheckpoint(fs); ok && v > latest {
			latest = v
		}
	}
	if version < 0 {
		version = latest
	}
	if version > latest {
		return nil, fmt.Errorf("delta log: %w: version %d, latest is %d", ErrVersionNotFound, version, latest)
	}

	// Newest first, over the versions that have checkpoints (not every version: a hostile
	// file name can claim version 10^18).
	cpVersions := make([]int64, 0, len(checkpoints))
	for v := range checkpoints {
		if v <= version {
			cpVersions = append(cpVersions, v)
		}
	}
	sort.Slice(cpVersions, func(i, j int) bool { return cpVersions[i] > cpVersions[j] })
	var cpFiles []logFile
	cpVersion := int64(-1)
	for _, v := range cpVersions {
		if files, ok := completeCheckpoint(checkpoints[v]); ok {
			cpFiles, cpVersion = files, v
			break
		}
	}
	cache, _ := log.(StateCache)
	var from *Replayed
	if cache != nil {
		from = cache.ReplayedState()
		if from != nil && from.snap.Version > latest {
			// The log holds fewer versions than the state kept: the table
			// was dropped and created again at this location.
			cache.DropReplayedState()
			from = nil
		}
		if from != nil && (from.snap.Version > version || from.snap.Version < cpVersion) {
			from = nil // time travel, or the checkpoint is nearer
		}
	}
	if from != nil && from.snap.Version == version {
		if from.snap.Checkpoint == checkpointName(cpFiles) {
			return from.snap, nil
		}
		// A checkpoint of the version was written since: the snapshot
		// says replay would start from it now.
		s := *from.snap
		s.Checkpoint = checkpointName(cpFiles)
		return &s, nil
	}

	s := &Snapshot{Version: version, Txns: map[string]Txn{}, Domains: map[string]DomainMetadata{}}
	if hasLast {
		if b, err := log.Read(ctx, LastCheckpointName); err == nil {
			// A hint only: a stale or unreadable one does not stop replay, which lists.
			s.LastCheckpoint, _ = ParseLastCheckpoint(b)
		}
	}

	st := newState()
	start := int64(0)
	s.Checkpoint = checkpointName(cpFiles)
	switch {
	case from != nil:
		// Commits are immutable once written (put-if-absent): the state
		// kept at an earlier version plus the commits after it is the
		// replay from the checkpoint, without reading the checkpoint or
		// the commits before that version again.
		st = from.st.clone()
		start = from.snap.Version + 1
	case cpFiles != nil:
		if err := st.loadCheckpoint(ctx, log, cpFiles); err != nil {
			return nil, err
		}
		start = cpVersion + 1
	}
	for v := start; v <= version; v++ {
		f, ok := commits[v]
		if !ok {
			// A listing taken while commits are created may miss one and
			// show a later one (a directory read concurrently with creates
			// returns each new entry or not, in hash order on ext4): the
			// file itself decides.
			f = logFile{name: CommitName(v), version: v, kind: kindCommit, json: true}
		}
		b, err := log.Read(ctx, f.name)
		if !ok && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("delta log: %w: commit %s is missing (replay from %d to %d)", ErrVersionNotFound, CommitName(v), start, version)
		}
		if err != nil {
			return nil, fmt.Errorf("delta log: read %s: %w", f.name, err)
		}
		acts, err := ParseCommit(f.name, b)
		if err != nil {
			return nil, err
		}
		if err := st.applyCommit(f.name, acts); err != nil {
			return nil, err
		}
		if v == version {
			for _, a := range acts {
				if a.CommitInfo != nil {
					s.CommitInfo = a.CommitInfo
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if start > version {
		// The snapshot is a checkpoint's, which keeps no commitInfo: it is
		// in the commit file of the version, when that is still there (a
		// writer of in-commit timestamps needs the last one).
		if b, err := log.Read(ctx, CommitName(version)); err == nil {
			if acts, err := ParseCommit(CommitName(version), b); err == nil {
				for _, a := range acts {
					if a.CommitInfo != nil {
						s.CommitInfo = a.CommitInfo
					}
				}
			}
		}
	}
	if st.protocol == nil {
		return nil, fmt.Errorf("delta log: %w: no protocol action up to version %d", ErrMalformed, version)
	}
	if st.metadata == nil {
		return nil, fmt.Errorf("delta log: %w: no metaData action up to version %d", ErrMalformed, version)
	}
	s.Protocol, s.Metadata = *st.protocol, *st.metadata
	if s.Schema, err = ParseSchema(s.Metadata.SchemaString); err != nil {
		return nil, fmt.Errorf("delta log: version %d: %w", version, err)
	}
	for _, a := range st.adds {
		s.Files = append(s.Files, a)
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	for _, r := range st.removes {
		s.Tombstones = append(s.Tombstones, r)
	}
	sort.Slice(s.Tombstones, func(i, j int) bool { return s.Tombstones[i].Path < s.Tombstones[j].Path })
	s.Txns, s.Domains = st.txns, st.domains
	if cache != nil {
		cache.KeepReplayedState(&Replayed{snap: s, st: st})
	}
	return s, nil
}

// checkpointName is the name of a checkpoint's first file, "" for none.
func checkpointName(files []logFile) string {
	if len(files) == 0 {
		return ""
	}
	return files[0].name
}

// StateCache is implemented by a Log that keeps the state replay reached at the newest
// version it loaded: the next Load of that version returns its snapshot, and a Load of a
// later one applies only the commits after it (commits are immutable once written, by
// put-if-absent, and a commit's successor never changes the state before it). Load still
// lists the log every time, so the latest version is always the listing's. A state kept
// for a version the listing no longer reaches (the table was dropped and created again
// at its location) is dropped; a table dropped and created again that has grown past the
// kept version meanwhile is not told apart: callers that drop a table drop its state.
type StateCache interface {
	// ReplayedState returns the state kept, nil when none.
	ReplayedState() *Replayed
	// KeepReplayedState keeps r unless a state of a later version is kept.
	KeepReplayedState(r *Replayed)
	// DropReplayedState forgets the state kept.
	DropReplayedState()
}

// Replayed is the state of a table's log replayed to one version: its snapshot, and the
// reconciled actions later commits apply to. It is never modified once made.
type Replayed struct {
	snap *Snapshot
	st   *state
}

// Version is the version replay reached.
func (r *Replayed) Version() int64 { return r.snap.Version }

// clone copies the state, so that commits applied to the copy leave st as it is.
func (st *state) clone() *state {
	return &state{
		protocol: st.protocol, metadata: st.metadata,
		adds: maps.Clone(st.adds), addDV: maps.Clone(st.addDV), removes: maps.Clone(st.removes),
		txns: maps.Clone(st.txns), domains: maps.Clone(st.domains),
	}
}

// completeCheckpoint picks one complete checkpoint among those of a version: a UUID-named
// or classic one, else a multi-part one with every part present.
func completeCheckpoint(files []logFile) ([]logFile, bool) {
	for _, kind := range []logFileKind{kindUUIDCheckpoint, kindClassicCheckpoint} {
		for _, f := range files {
			if f.kind == kind {
				return []logFile{f}, true
			}
		}
	}
	byParts := map[int]map[int]logFile{}
	for _, f := range files {
		if f.kind == kindMultipartCheckpoint {
			if byParts[f.parts] == nil {
				byParts[f.parts] = map[int]logFile{}
			}
			byParts[f.parts][f.part] = f
		}
	}
	best := 0
	for n, parts := range byParts {
		if len(parts) == n && n > best {
			best = n
		}
	}
	if best == 0 {
		return nil, false
	}
	out := make([]logFile, 0, best)
	for p := 1; p <= best; p++ {
		out = append(out, byParts[best][p])
	}
	return out, true
}

// fileKey is a logical file: its decoded path and its deletion vector's unique id.
type fileKey struct{ path, dv string }

type state struct {
	protocol *Protocol
	metadata *Metadata
	adds     map[string]*AddFile // by decoded path
	addDV    map[string]string   // the dv unique id of adds[path]
	removes  map[fileKey]*RemoveFile
	txns     map[string]Txn
	domains  map[string]DomainMetadata
}

func newState() *state {
	return &state{
		adds: map[string]*AddFile{}, addDV: map[string]string{}, removes: map[fileKey]*RemoveFile{},
		txns: map[string]Txn{}, domains: map[string]DomainMetadata{},
	}
}

// applyCommit applies one commit. Actions within a commit are unordered, so the protocol
// allows at most one add and one remove per path; removes are applied before adds, which
// is what a commit replacing a file's deletion vector (remove (p, dv1), add (p, dv2)) means.
func (st *state) applyCommit(name string, acts []Action) error {
	var protocols, metas int
	addSeen, removeSeen := map[string]bool{}, map[string]bool{}
	var adds []*AddFile
	for _, a := range acts {
		switch {
		case a.Protocol != nil:
			protocols++
			st.protocol = a.Protocol
		case a.MetaData != nil:
			metas++
			st.metadata = a.MetaData
		case a.Txn != nil:
			st.txns[a.Txn.AppID] = *a.Txn
		case a.DomainMetadata != nil:
			st.domain(*a.DomainMetadata)
		case a.Remove != nil:
			p, err := DecodePath(a.Remove.Path)
			if err != nil {
				return fmt.Errorf("%s: remove: %w", name, err)
			}
			if removeSeen[p] {
				return fmt.Errorf("%s: %w: path %q removed twice in one commit", name, ErrMalformed, a.Remove.Path)
			}
			removeSeen[p] = true
			st.remove(p, a.Remove)
		case a.Add != nil:
			p, err := DecodePath(a.Add.Path)
			if err != nil {
				return fmt.Errorf("%s: add: %w", name, err)
			}
			if addSeen[p] {
				return fmt.Errorf("%s: %w: path %q added twice in one commit", name, ErrMalformed, a.Add.Path)
			}
			addSeen[p] = true
			adds = append(adds, a.Add)
		}
	}
	if protocols > 1 || metas > 1 {
		return fmt.Errorf("%s: %w: a commit holds at most one protocol and one metaData action", name, ErrMalformed)
	}
	for _, a := range adds {
		p, _ := DecodePath(a.Path)
		st.add(p, a)
	}
	return nil
}

func (st *state) add(p string, a *AddFile) {
	id := a.DeletionVector.UniqueID()
	st.adds[p], st.addDV[p] = a, id
	delete(st.removes, fileKey{p, id})
}

func (st *state) remove(p string, r *RemoveFile) {
	id := r.DeletionVector.UniqueID()
	if cur, ok := st.addDV[p]; ok && cur == id {
		delete(st.adds, p)
		delete(st.addDV, p)
	}
	st.removes[fileKey{p, id}] = r
}

func (st *state) domain(d DomainMetadata) {
	if d.Removed {
		delete(st.domains, d.Domain)
	} else {
		st.domains[d.Domain] = d
	}
}

// loadCheckpoint applies a checkpoint (every part, and the sidecars of a V2 one) as the
// starting state.
func (st *state) loadCheckpoint(ctx context.Context, log Log, files []logFile) error {
	var all []Action
	for _, f := range files {
		acts, err := readCheckpointFile(ctx, log, f.name, f.json)
		if err != nil {
			return err
		}
		all = append(all, acts...)
	}
	var sidecars []*Sidecar
	var cpMeta int
	var fileActions int
	for _, a := range all {
		switch {
		case a.Sidecar != nil:
			sidecars = append(sidecars, a.Sidecar)
		case a.CheckpointMetadata != nil:
			cpMeta++
		case a.Add != nil || a.Remove != nil:
			fileActions++
		}
	}
	if (len(sidecars) > 0 || files[0].kind == kindUUIDCheckpoint) && cpMeta != 1 {
		return fmt.Errorf("%s: %w: a V2 checkpoint holds exactly one checkpointMetadata action, this one %d", files[0].name, ErrMalformed, cpMeta)
	}
	if len(sidecars) > 0 && fileActions > 0 {
		return fmt.Errorf("%s: %w: a V2 checkpoint keeps its file actions either inline or in sidecars, not both", files[0].name, ErrMalformed)
	}
	for _, sc := range sidecars {
		name, err := sidecarName(sc.Path)
		if err != nil {
			return fmt.Errorf("%s: %w", files[0].name, err)
		}
		acts, err := readCheckpointFile(ctx, log, SidecarDir+"/"+name, false)
		if err != nil {
			return err
		}
		for _, a := range acts {
			if a.Add == nil && a.Remove == nil {
				return fmt.Errorf("_sidecars/%s: %w: a sidecar holds only add and remove actions", name, ErrMalformed)
			}
		}
		all = append(all, acts...)
	}
	// A checkpoint is a reconciled state: apply it as one commit, without the one-action-
	// per-path rule a checkpoint's add and remove for different dvs of a path would break.
	var adds []*AddFile
	for _, a := range all {
		switch {
		case a.Protocol != nil:
			st.protocol = a.Protocol
		case a.MetaData != nil:
			st.metadata = a.MetaData
		case a.Txn != nil:
			st.txns[a.Txn.AppID] = *a.Txn
		case a.DomainMetadata != nil:
			st.domain(*a.DomainMetadata)
		case a.Remove != nil:
			p, err := DecodePath(a.Remove.Path)
			if err != nil {
				return fmt.Errorf("%s: %w", files[0].name, err)
			}
			st.removes[fileKey{p, a.Remove.DeletionVector.UniqueID()}] = a.Remove
		case a.Add != nil:
			adds = append(adds, a.Add)
		}
	}
	for _, a := range adds {
		p, err := DecodePath(a.Path)
		if err != nil {
			return fmt.Errorf("%s: %w", files[0].name, err)
		}
		if _, dup := st.adds[p]; dup {
			return fmt.Errorf("%s: %w: path %q added twice in a checkpoint", files[0].name, ErrMalformed, a.Path)
		}
		st.add(p, a)
	}
	return nil
}

// CheckpointCache is implemented by a Log that keeps the decoded actions of the
// checkpoint files it served: a checkpoint file never changes (two writers of one classic
// checkpoint write the same state), and decoding one is most of a replay's cost. Replay
// neither modifies the actions it gets nor keeps them past the snapshot, whose files
// point into them: callers must not modify a snapshot's files.
type CheckpointCache interface {
	// CheckpointActions returns the actions of a checkpoint file decoded before.
	CheckpointActions(name string) ([]Action, bool)
	// KeepCheckpointActions keeps a checkpoint file's decoded actions.
	KeepCheckpointActions(name string, actions []Action)
}

func readCheckpointFile(ctx context.Context, log Log, name string, isJSON bool) ([]Action, error) {
	cache, cached := log.(CheckpointCache)
	if cached {
		if acts, ok := cache.CheckpointActions(name); ok {
			return acts, nil
		}
	}
	acts, err := decodeCheckpointFile(ctx, log, name, isJSON)
	if err == nil && cached {
		cache.KeepCheckpointActions(name, acts)
	}
	return acts, err
}

func decodeCheckpointFile(ctx context.Context, log Log, name string, isJSON bool) ([]Action, error) {
	b, err := log.Read(ctx, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("delta log: checkpoint file %s: %w", name, err)
		}
		return nil, fmt.Errorf("delta log: read %s: %w", name, err)
	}
	if isJSON {
		return parseLines(name, b, inCheckpoint)
	}
	return ParseCheckpointParquet(ctx, name, b)
}

// sidecarName reduces a sidecar action's path to the file name under _delta_log/_sidecars:
// sidecars live there by rule, so only the last segment of a URI is used, and one that
// would leave the directory is malformed.
func sidecarName(p string) (string, error) {
	dec, err := DecodePath(p)
	if err != nil {
		return "", err
	}
	base := path.Base(strings.TrimSuffix(dec, "/"))
	if base == "." || base == ".." || base == "/" || base == "" {
		return "", fmt.Errorf("%w: sidecar path %q names no file", ErrMalformed, p)
	}
	return base, nil
}

// ParseInterval reads a table property interval such as delta.deletedFileRetentionDuration
// ("interval 1 week", "interval 7 days", "interval 168 hours"), as Spark writes them.
func ParseInterval(s string) (time.Duration, error) {
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(f) == 3 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) != 2 {
		return 0, fmt.Errorf("interval %q: want \"interval <n> <unit>\"", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("interval %q: %q is not a non-negative integer", s, f[0])
	}
	units := map[string]time.Duration{
		"microsecond": time.Microsecond, "millisecond": time.Millisecond, "second": time.Second,
		"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
	}
	u, ok := units[strings.TrimSuffix(f[1], "s")]
	if !ok {
		return 0, fmt.Errorf("interval %q: unknown unit %q", s, f[1])
	}
	if n > int64(math.MaxInt64/u) {
		return 0, fmt.Errorf("interval %q overflows", s)
	}
	return time.Duration(n) * u, nil
}

// LiveTombstones are the tombstones not yet expired at now under retention (a remove
// without a deletionTimestamp never expires, as VACUUM cannot date it).
func (s *Snapshot) LiveTombstones(now time.Time, retention time.Duration) []*RemoveFile {
	var out []*RemoveFile
	cut := now.Add(-retention).UnixMilli()
	for _, r := range s.Tombstones {
		if r.DeletionTimestamp == nil || *r.DeletionTimestamp > cut {
			out = append(out, r)
		}
	}
	return out
}
