package delta

import (
	"context"
	"errors"
	"testing"
)

// partialList is a log whose listing misses some names, as a directory
// read concurrently with creates may, while reading them works.
type partialList struct {
	memLog
	hidden map[string]bool
}

func (p partialList) List(ctx context.Context) ([]string, error) {
	all, _ := p.memLog.List(ctx)
	var out []string
	for _, n := range all {
		if !p.hidden[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// TestLoadListingGap: a commit the listing missed between two it shows
// is read all the same; one that is really missing is ErrVersionNotFound.
func TestLoadListingGap(t *testing.T) {
	ctx := context.Background()
	log := loadDirLog(t, "appends")
	want, err := Load(ctx, log, -1)
	if err != nil || want.Version < 2 {
		t.Fatalf("fixture: %v, version %d", err, want.Version)
	}
	gap := CommitName(want.Version - 1)
	got, err := Load(ctx, partialList{log, map[string]bool{gap: true}}, -1)
	if err != nil || got.Version != want.Version || len(got.Files) != len(want.Files) {
		t.Fatalf("with %s unlisted: %v, version %d, %d files; want %d, %d", gap, err, got.Version, len(got.Files), want.Version, len(want.Files))
	}
	delete(log, gap)
	if _, err := Load(ctx, log, -1); !errors.Is(err, ErrVersionNotFound) {
		t.Fatalf("with %s gone: %v, want ErrVersionNotFound", gap, err)
	}
}
