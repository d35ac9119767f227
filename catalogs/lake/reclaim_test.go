package lake_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// fakeReclaim is a table with candidates; landing are files a commit
// references from the second read of the references on; recreated makes
// that read find another table.
type fakeReclaim struct {
	cands     []lake.Candidate
	refs      map[string]bool
	held      map[string]bool
	landing   []string
	recreated bool
	reads     int
	deleted   []string
}

func (f *fakeReclaim) Refs(context.Context) (bool, error) {
	f.reads++
	if f.reads > 1 {
		for _, l := range f.landing {
			f.refs[l] = true
		}
		return !f.recreated, nil
	}
	return true, nil
}
func (f *fakeReclaim) Referenced(ref string) bool { return f.refs[ref] }
func (f *fakeReclaim) Held(ref string) bool       { return f.held[ref] }
func (f *fakeReclaim) Candidates(_ context.Context, fn func(lake.Candidate) error) error {
	for _, c := range f.cands {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}
func (f *fakeReclaim) Delete(_ context.Context, p string) error {
	f.deleted = append(f.deleted, p)
	return nil
}

// TestReclaimer: the floor deletes only old, unreferenced, unheld
// candidates that the second read of the references still does not
// reach; a dry run reports them; a recreated table loses nothing.
func TestReclaimer(t *testing.T) {
	now := time.Now()
	old, young := now.Add(-2*time.Hour), now.Add(-time.Minute)
	cands := func() []lake.Candidate {
		return []lake.Candidate{
			{Path: "/t/data-orphan", Ref: "data-orphan", Kind: lake.KindData, Size: 10, Mod: old},
			{Path: "/t/manifest-orphan", Ref: "manifest-orphan", Kind: lake.KindManifest, Size: 5, Mod: old},
			{Path: "/t/data-young", Ref: "data-young", Mod: young},
			{Path: "/t/data-held", Ref: "data-held", Mod: old},
			{Path: "/t/data-live", Ref: "data-live", Mod: old},
			{Path: "/t/data-landing", Ref: "data-landing", Mod: old},
			{Path: "/t/no-time", Ref: "no-time"},
		}
	}
	cases := []struct {
		name      string
		dryRun    bool
		recreated bool
		want      []string
		wantRep   catalogs.ReclaimReport
	}{
		{"delete", false, false, []string{"/t/data-orphan", "/t/manifest-orphan"},
			catalogs.ReclaimReport{DataFiles: 1, ManifestFiles: 1, Bytes: 15, Young: 3}},
		{"dry run", true, false, nil,
			catalogs.ReclaimReport{DataFiles: 1, ManifestFiles: 1, Bytes: 15, Young: 3, Orphans: []string{"/t/data-orphan", "/t/manifest-orphan"}}},
		{"recreated", false, true, nil, catalogs.ReclaimReport{Young: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeReclaim{cands: cands(), refs: map[string]bool{"data-live": true}, held: map[string]bool{"data-held": true},
				landing: []string{"data-landing"}, recreated: c.recreated}
			id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: "t"}
			rep, err := lake.Reclaimer{}.Reclaim(context.Background(), id, f,
				catalogs.ReclaimOptions{MinAge: time.Hour, DryRun: c.dryRun}, now.Add(-time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.deleted, c.want) {
				t.Errorf("deleted %v, want %v", f.deleted, c.want)
			}
			if rep.DataFiles != c.wantRep.DataFiles || rep.ManifestFiles != c.wantRep.ManifestFiles || rep.Bytes != c.wantRep.Bytes ||
				rep.Young != c.wantRep.Young || !slices.Equal(rep.Orphans, c.wantRep.Orphans) {
				t.Errorf("report %+v, want %+v", rep, c.wantRep)
			}
		})
	}
}

// TestAll: a non-positive min age is refused; a table gone meanwhile is
// not counted, a failing one is.
func TestAll(t *testing.T) {
	ctx := context.Background()
	if _, err := lake.All(ctx, "lake", catalogs.ReclaimOptions{}, nil, nil); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("All with min age 0 = %v, want ErrInvalidArgument", err)
	}
	ts := []catalogs.TableIdent{{Name: "gone"}, {Name: "bad"}, {Name: "ok"}}
	rep, err := lake.All(ctx, "lake", catalogs.ReclaimOptions{MinAge: time.Hour}, ts, func(_ context.Context, t catalogs.TableIdent, _ time.Time) (catalogs.ReclaimReport, error) {
		switch t.Name {
		case "gone":
			return catalogs.ReclaimReport{}, catalogs.Errorf(catalogs.ErrNotFound, "gone")
		case "bad":
			return catalogs.ReclaimReport{}, catalogs.Errorf(catalogs.ErrUnavailable, "bad")
		}
		return catalogs.ReclaimReport{DataFiles: 2}, nil
	})
	if rep.Tables != 2 || rep.TablesFailed != 1 || rep.DataFiles != 2 || !errors.Is(err, catalogs.ErrUnavailable) {
		t.Errorf("All = %+v, %v", rep, err)
	}
}
